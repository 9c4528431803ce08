//! MCP over stdio: newline-delimited JSON-RPC messages on stdin, answers
//! on stdout (one line each; notifications get none), each message handed
//! to the session's mediator as a POST to the MCP endpoint would be,
//! recorded with `{"stdio": {"api": "mcp"}}` as its transport. A line
//! longer than [`MAX_LINE`] is answered with a parse error and skipped,
//! so memory stays bounded. A second `initialize` is refused (invalid
//! request) and not handed over. End of input is the client disconnecting.
//! When the run stops (a step, error or event limit), the request that
//! stopped it and every request already read after it are answered with a
//! JSON-RPC error saying why (-32000, the words HTTP's 503 carries), so
//! that no client waits on an answer that will not come; then the stream
//! closes.

use super::session::{Handle, Job, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use worldline_protocol::routes::Route;
use worldline_runtime::mediate::boundary::Via;

/// The longest message read.
pub(crate) const MAX_LINE: usize = 16 << 20;

/// Serve `input` until it ends (or the run stops), answering on `output`.
/// `busy` holds while a message read is being answered (not while input
/// is awaited), so the caller knows an answer is still to be written.
pub(crate) fn serve(
    session: &Handle,
    input: impl Read,
    mut output: impl Write,
    busy: &AtomicBool,
) -> std::io::Result<()> {
    let mut input = BufReader::new(input);
    let mut initialized = false;
    loop {
        busy.store(false, Ordering::SeqCst);
        let mut line = Vec::new();
        let read = input
            .by_ref()
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)?;
        busy.store(true, Ordering::SeqCst);
        if read == 0 {
            return Ok(());
        }
        if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
            skip_line(&mut input)?;
            let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: message longer than {MAX_LINE} bytes")}});
            writeln!(output, "{}", worldline_case::canon::to_string(&error))?;
            output.flush()?;
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let id = initialize_id(&line);
        if let (Some(id), true) = (&id, initialized) {
            // Not handed over, so not recorded: what the session
            // negotiated stands (HTTP answers the same 409).
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": "Invalid Request: this session is initialized already (initialize once per session; end of input ends it)"}});
            writeln!(output, "{}", worldline_case::canon::to_string(&error))?;
            output.flush()?;
            continue;
        }
        let request = request_id(&line);
        let job: Job =
            Box::new(move |st| st.answer_http(&Route::Mcp, "POST", "", &line, &Via::Stdio));
        let body = match session.call_blocking(job) {
            Reply::Answered(Some(r)) => r.body,
            Reply::Answered(None) => Vec::new(),
            Reply::Stopped(why) => return ended(request, input.buffer(), &why, output),
        };
        initialized |= id.is_some() && initialized_by(&body);
        if !body.is_empty() {
            output.write_all(&body)?;
            output.write_all(b"\n")?;
            output.flush()?;
        }
        if session.stopped() {
            return Ok(());
        }
    }
}

/// Answer the request that found the run stopped (`id`, when it is one)
/// and each whole request line in `read` (read, not yet answered) with the
/// error that says why.
fn ended(id: Option<Value>, read: &[u8], why: &str, mut output: impl Write) -> std::io::Result<()> {
    let message = format!("the run has ended: {why}");
    let rest = read.split_inclusive(|b| *b == b'\n');
    let pending = rest
        .filter(|l| l.ends_with(b"\n") && !l.iter().all(u8::is_ascii_whitespace))
        .filter_map(request_id);
    for id in id.into_iter().chain(pending) {
        let error =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}});
        writeln!(output, "{}", worldline_case::canon::to_string(&error))?;
    }
    output.flush()
}

/// The id a message's answer carries: `None` for a notification (or a
/// response), which is answered with nothing; null for a message that is
/// not a JSON object (as its parse error or invalid request would be).
fn request_id(line: &[u8]) -> Option<Value> {
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(line) else {
        return Some(Value::Null);
    };
    let response = !message.contains_key("method")
        && (message.contains_key("result") || message.contains_key("error"));
    if response {
        return None;
    }
    if !message.contains_key("method") {
        return Some(message.remove("id").unwrap_or(Value::Null));
    }
    message.remove("id")
}

/// The id of an `initialize` request (`None` for any other message).
fn initialize_id(line: &[u8]) -> Option<Value> {
    let mut message = serde_json::from_slice::<Value>(line).ok()?;
    if message["method"] != "initialize" {
        return None;
    }
    message.get_mut("id").map(Value::take)
}

/// Whether an answer to `initialize` opened the session (a result, not an
/// error).
fn initialized_by(answer: &[u8]) -> bool {
    serde_json::from_slice::<Value>(answer).is_ok_and(|a| a.get("result").is_some())
}

/// Read past the rest of an over-long line.
fn skip_line(input: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|b| *b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}
