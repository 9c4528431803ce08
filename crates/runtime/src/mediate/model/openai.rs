//! The `openai` provider: POST the agent's request to an OpenAI-compatible
//! `/chat/completions` endpoint (OpenAI, vLLM, llama.cpp server, Ollama)
//! with an async client on a small tokio runtime, bounded in real time,
//! retrying 429s, 5xx, timeouts and connection errors. Every attempt is
//! recorded; the API key only ever goes into the Authorization header and
//! is scrubbed from anything the endpoint sends back.

use super::chat;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use worldline_case::bounded::BodyError;
use worldline_case::case::model::ModelConfig;
use worldline_case::error_kind::ErrorKind;
use worldline_log::log::rendered;

/// One endpoint as a case configures it.
pub(crate) struct Endpoint {
    url: String,
    model: Option<String>,
    key: Option<String>,
    /// Why the key is missing, when the case names a variable that is unset.
    key_problem: Option<String>,
    attempt_timeout: Duration,
    retries: u32,
    /// Real-time bound of one model call, all attempts together (the
    /// case's `limits.timeout_ms`), so the host never hangs.
    budget: Duration,
    /// `[model] max_connections`: the endpoint's shared slots.
    slots: Option<std::sync::Arc<super::slots::Slots>>,
    /// `[model] token_ids`: ask for token ids and log-probabilities.
    token_ids: bool,
}

/// What one call produced: the guest's answer and the record of the call.
pub(crate) struct Outcome {
    /// `Ok(completion)` or `Err((kind, message))`.
    pub answer: Result<Value, (ErrorKind, String)>,
    pub record: Value,
    /// The call failed after using the case's whole time budget
    /// (`limits.timeout_ms`): the run is out of real time.
    pub budget_spent: bool,
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("worldline-model")
            .enable_all()
            .build()
            .expect("a tokio runtime starts")
    })
}

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .user_agent(concat!("worldline/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("an HTTP client builds")
    })
}

/// An exponential backoff step spread over its upper half, so runs that
/// met the same rate limit together do not all come back together. The
/// spread comes from a per-process call counter (no clock, no entropy);
/// the wait is real time, recorded only as metadata.
fn jittered(step: Duration) -> Duration {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let spread = (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as u32; // 0..1024
    step / 2 + step / 2 * spread / 1024
}

/// `text` with `key` (of 4 bytes or more), in each form JSON text holds
/// it, replaced by `[redacted]`.
fn scrub(text: &str, key: Option<&str>) -> String {
    match key {
        Some(k) if k.len() >= 4 => (worldline_log::redact::forms::json_forms(k).iter())
            .fold(text.to_string(), |t, form| {
                t.replace(form.as_str(), "[redacted]")
            }),
        _ => text.to_string(),
    }
}

/// How one attempt ended.
enum Attempt {
    Done(Value),
    /// `(kind, message, retry?)`.
    Failed(ErrorKind, String, bool),
}

impl Endpoint {
    pub(crate) fn new(config: &ModelConfig, budget: Duration) -> Self {
        let (key, key_problem) = match &config.api_key_env {
            None => (None, None),
            Some(name) => match std::env::var(name) {
                Ok(k) if !k.is_empty() => (Some(k), None),
                _ => (
                    None,
                    Some(format!(
                        "the case's [model] api_key_env names `{name}`, which is not set; export it before the run"
                    )),
                ),
            },
        };
        Endpoint {
            url: format!(
                "{}/chat/completions",
                config
                    .base_url
                    .as_deref()
                    .unwrap_or("")
                    .trim_end_matches('/')
            ),
            model: config.model.clone(),
            key,
            key_problem,
            attempt_timeout: Duration::from_millis(config.timeout_ms),
            retries: config.retries,
            budget,
            slots: config
                .max_connections
                .map(|max| super::slots::of(config.base_url.as_deref().unwrap_or(""), max.max(1))),
            token_ids: config.token_ids,
        }
    }

    /// Replace the API key wherever it appears in text from the outside,
    /// in each form JSON text holds it (an upstream echoing it with `/` as
    /// `\/` had it recorded).
    fn redact(&self, text: &str) -> String {
        scrub(text, self.key.as_deref())
    }

    /// The body sent: the agent's request, with the case's model and
    /// without streaming; with `[model] token_ids`, asking for token ids
    /// (vLLM's `return_token_ids`) and log-probabilities.
    fn render(&self, request: &Value) -> Value {
        let mut body = match request {
            Value::Object(_) => request.clone(),
            _ => json!({}),
        };
        if let Some(m) = &self.model {
            body["model"] = json!(m);
        }
        if let Some(o) = body.as_object_mut() {
            o.remove("stream");
            if self.token_ids {
                o.insert("return_token_ids".into(), json!(true));
                o.entry("logprobs").or_insert(json!(true));
            }
        }
        body
    }

    /// Call the endpoint for `request`. `changes`: record the body sent
    /// as what it changes in `request` (`rendered_changes`, decision
    /// 0430: the event's request holds the rest), else whole (`rendered`).
    pub(crate) fn complete(&self, request: &Value, changes: bool) -> Outcome {
        let rendered = self.render(request);
        let mut record = json!({
            "provider": "openai",
            "endpoint": self.url,
            "params": chat::params(&rendered),
        });
        match changes
            .then(|| rendered::changes(request, &rendered))
            .flatten()
        {
            Some(c) => record["rendered_changes"] = c,
            None => record["rendered"] = rendered.clone(),
        }
        if let Some(problem) = &self.key_problem {
            return Outcome {
                answer: Err((ErrorKind::Failed, problem.clone())),
                record,
                budget_spent: false,
            };
        }
        if rendered.get("model").is_none() {
            let message = "no model named: set `model` in the agent's request or the case's [model] model (or --model-set model=NAME)".to_string();
            return Outcome {
                answer: Err((ErrorKind::Failed, message)),
                record,
                budget_spent: false,
            };
        }
        let body = serde_json::to_vec(&rendered).expect("JSON serializes");
        let started = Instant::now();
        let mut attempts = Vec::new();
        let mut raw = None;
        let mut last = Attempt::Failed(ErrorKind::Timeout, "no attempt was made".into(), false);
        // The attempts wait in real time: this run gives up its CPU slot
        // meanwhile (`--jobs` beyond the cores).
        worldline_case::parallel::waiting(|| {
            for n in 0..=self.retries {
                let left = self.budget.saturating_sub(started.elapsed());
                if left.is_zero() {
                    last = Attempt::Failed(
                        ErrorKind::Timeout,
                        format!(
                            "the model call used the case's whole time budget ({} ms, limits.timeout_ms)",
                            self.budget.as_millis()
                        ),
                        false,
                    );
                    break;
                }
                let queued = Instant::now();
                let held = match &self.slots {
                    Some(slots) => match slots.acquire(started + self.budget) {
                        Some(held) => Some(held),
                        None => {
                            last = Attempt::Failed(
                                ErrorKind::Timeout,
                                format!(
                                    "no connection slot came free within the case's time budget ({} ms; [model] max_connections)",
                                    self.budget.as_millis()
                                ),
                                false,
                            );
                            break;
                        }
                    },
                    None => None,
                };
                let queued_ms = queued.elapsed().as_millis() as u64;
                let left = self.budget.saturating_sub(started.elapsed());
                let limit = self.attempt_timeout.min(left);
                let t0 = Instant::now();
                let (attempt, status, retry_after, bytes) = self.attempt(&body, limit);
                drop(held);
                let mut entry = json!({
                    "attempt": n + 1,
                    "real_latency_ms": t0.elapsed().as_millis() as u64,
                });
                if self.slots.is_some() {
                    entry["queued_ms"] = json!(queued_ms);
                }
                if let Some(s) = status {
                    entry["status"] = json!(s);
                }
                if let Attempt::Failed(kind, message, _) = &attempt {
                    entry["error"] = json!({"kind": kind, "message": message});
                }
                raw = bytes;
                let retry = matches!(attempt, Attempt::Failed(_, _, true)) && n < self.retries;
                last = attempt;
                if !retry {
                    attempts.push(entry);
                    break;
                }
                let backoff = retry_after
                    .unwrap_or_else(|| jittered(Duration::from_millis(200 << n.min(5))))
                    .min(Duration::from_secs(10))
                    .min(self.budget.saturating_sub(started.elapsed()));
                entry["backoff_ms"] = json!(backoff.as_millis() as u64);
                attempts.push(entry);
                std::thread::sleep(backoff);
            }
        });
        record["attempts"] = json!(attempts);
        record["real_latency_ms"] = json!(started.elapsed().as_millis() as u64);
        if let Some(bytes) = &raw {
            match std::str::from_utf8(bytes) {
                Ok(text) => record["raw"] = json!(self.redact(text)),
                Err(_) => {
                    use base64::Engine as _;
                    record["raw_base64"] =
                        json!(base64::engine::general_purpose::STANDARD.encode(bytes));
                }
            }
        }
        let answer = match last {
            Attempt::Done(v) => {
                record["model"] = v.get("model").cloned().unwrap_or(Value::Null);
                record["version"] = v.get("system_fingerprint").cloned().unwrap_or(Value::Null);
                record["usage"] = v.get("usage").cloned().unwrap_or(Value::Null);
                record["finish_reason"] = chat::finish_reason(&v);
                Ok(v)
            }
            Attempt::Failed(kind, message, _) => Err((kind, message)),
        };
        Outcome {
            budget_spent: answer.is_err() && started.elapsed() >= self.budget,
            answer,
            record,
        }
    }

    /// One HTTP attempt within `limit`: how it ended, the status, the
    /// server's Retry-After and the body bytes.
    fn attempt(
        &self,
        body: &[u8],
        limit: Duration,
    ) -> (Attempt, Option<u16>, Option<Duration>, Option<Vec<u8>>) {
        let mut req = client()
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.to_vec());
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        let sent = runtime().block_on(async {
            tokio::time::timeout(limit, async {
                let resp = req.send().await?;
                let status = resp.status().as_u16();
                let retry_after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let bytes = worldline_case::bounded::body(
                    resp.content_length(),
                    resp.bytes_stream(),
                    worldline_case::bounded::MODEL_ANSWER,
                )
                .await;
                Ok::<_, reqwest::Error>((status, retry_after, bytes))
            })
            .await
        });
        match sent {
            Err(_) => (
                Attempt::Failed(
                    ErrorKind::Timeout,
                    format!(
                        "no complete answer from the endpoint within {} ms",
                        limit.as_millis()
                    ),
                    true,
                ),
                None,
                None,
                None,
            ),
            Ok(Err(e)) => {
                let kind = if e.is_timeout() {
                    ErrorKind::Timeout
                } else {
                    ErrorKind::Unavailable
                };
                let message =
                    self.redact(&format!("cannot reach {}: {}", self.url, error_chain(&e)));
                (Attempt::Failed(kind, message, true), None, None, None)
            }
            Ok(Ok((status, retry_after, Err(BodyError::TooLarge(cap))))) => (
                Attempt::Failed(
                    ErrorKind::Failed,
                    format!(
                        "the endpoint's answer is larger than the cap on a model answer ({}); it was not read further (ask for a shorter answer: max_tokens)",
                        worldline_case::bounded::size(cap)
                    ),
                    false,
                ),
                Some(status),
                retry_after,
                None,
            ),
            Ok(Ok((_, _, Err(BodyError::Http(e))))) => (
                Attempt::Failed(
                    if e.is_timeout() {
                        ErrorKind::Timeout
                    } else {
                        ErrorKind::Unavailable
                    },
                    self.redact(&format!(
                        "the answer from {} broke off: {}",
                        self.url,
                        error_chain(&e)
                    )),
                    true,
                ),
                None,
                None,
                None,
            ),
            Ok(Ok((status, retry_after, Ok(bytes)))) => {
                let attempt = self.judge(status, &bytes);
                (attempt, Some(status), retry_after, Some(bytes))
            }
        }
    }

    /// An answer's status and body, as the agent will see them.
    fn judge(&self, status: u16, bytes: &[u8]) -> Attempt {
        let text = self.redact(&String::from_utf8_lossy(bytes));
        let brief: String = text.chars().take(300).collect();
        match status {
            200..=299 => match serde_json::from_str::<Value>(&text) {
                Ok(v) if chat::is_completion(&v) => Attempt::Done(v),
                Ok(_) => Attempt::Failed(
                    ErrorKind::Failed,
                    format!(
                        "the endpoint's answer is not a chat completion (no `choices`): {brief}"
                    ),
                    false,
                ),
                Err(e) => Attempt::Failed(
                    ErrorKind::Failed,
                    format!("the endpoint's answer is not JSON ({e}): {brief}"),
                    false,
                ),
            },
            429 => Attempt::Failed(
                ErrorKind::Unavailable,
                format!("rate limited (HTTP 429): {brief}"),
                true,
            ),
            500..=599 => Attempt::Failed(
                ErrorKind::Unavailable,
                format!("the endpoint failed (HTTP {status}): {brief}"),
                true,
            ),
            _ => Attempt::Failed(
                ErrorKind::Failed,
                format!("the endpoint refused the request (HTTP {status}): {brief}"),
                false,
            ),
        }
    }
}

/// An error with its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    /// The key echoed with `/` as `\/` (valid JSON, as PHP writes it) is
    /// scrubbed too: it was recorded.
    #[test]
    fn a_key_echoed_in_any_json_form_is_scrubbed() {
        let key = "good/slashkey+Zq9";
        let body = r#"{"content": "ok via good\/slashkey+Zq9 and good/slashkey+Zq9"}"#;
        assert_eq!(
            super::scrub(body, Some(key)),
            r#"{"content": "ok via [redacted] and [redacted]"}"#
        );
        assert_eq!(super::scrub("abc", Some("ab")), "abc");
    }
}
