//! `worldline:agent/model.complete`: model calls mediated like tool calls.
//!
//! The event's request is `{"provider": …, "request": <the agent's
//! chat-completions JSON>}`; its response is `{"ok": <completion>}` or
//! `{"error": {kind, message}}`, plus `model_call`: what the provider did
//! (rendered request, model and version, sampling parameters, raw bytes,
//! usage, finish reason, real latency as metadata, virtual latency,
//! attempts). The guest only ever sees `ok`/`error`.
//!
//! Scripted answers are deterministic and re-computed on replay (so the
//! script's position and draws stay in step for forks). Answers of the
//! live providers (`openai`, `recorded`) come from the log while a
//! recording is followed: a replay never calls out.

pub(crate) mod chat;
pub(crate) mod openai;
pub(crate) mod recorded;
pub(crate) mod resent;
pub(crate) mod scripted;
pub(crate) mod slots;

use super::agent_api::error_answer;
use super::bindings::worldline::agent::model;
use super::bindings::worldline::agent::types::ToolError;
use super::entropy;
use super::{Answered, RunState, ServiceReply};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use worldline_case::canon;
use worldline_case::case::model::{CassetteMode, ModelConfig, Provider};
use worldline_case::error_kind::ErrorKind;
use worldline_log::log::call::{ModelAnswer, ModelRequest, Transport};
use worldline_log::log::{Effect, Extends, Held, Kind, kind, rules};

/// The call name of model events.
pub const CALL: &str = Kind::ModelComplete.name();
/// The provider a rerun records for a call its cassette answered.
const FROM_RECORDING: &str = "recording";
/// The provider a rerun records for the request that missed its
/// cassette under `--model fail` (answered with an error; the run stops).
const MISSED: &str = "none";

/// Answers the agent's model calls as the case's `[model]` says.
pub struct ModelService {
    config: ModelConfig,
    scripted: scripted::Scripted,
    endpoint: Option<openai::Endpoint>,
    recording: Option<recorded::HashCassette>,
    /// A rerun's recording, consulted before the provider.
    pub cassette: Option<RerunCassette>,
    /// Model calls answered so far (numbers ids in scripted completions).
    calls: u64,
    /// The last call failed after using the case's whole time budget.
    budget_spent: bool,
    /// The scripted model had no reply for the last call: why, with the
    /// agent's message (the run stops there).
    unscripted: Option<String>,
    /// `[model] token_ids`: the calls' token ids recorded so far.
    tokens: worldline_log::log::tokens::Writer,
    /// The scripted model's prompt tokens, counted from the last request.
    prompt: chat::Prompt,
    /// The latest request the agent sent through `model.complete`, as
    /// text: the next is read against it (decision 0392).
    last: Option<resent::Last>,
}

fn model_stream(seed: u64) -> rand_chacha::ChaCha20Rng {
    entropy::stream(seed, "model")
}

impl ModelService {
    /// `budget` bounds one call in real time; `case_dir` anchors a relative
    /// `recording`.
    pub fn new(config: &ModelConfig, seed: u64, budget: Duration, case_dir: &Path) -> Self {
        ModelService {
            scripted: scripted::Scripted::new(config, model_stream(seed)),
            endpoint: config
                .calls_out()
                .then(|| openai::Endpoint::new(config, budget)),
            recording: config
                .recording
                .as_ref()
                .map(|r| recorded::HashCassette::new(case_dir.join(r))),
            config: config.clone(),
            cassette: None,
            calls: 0,
            budget_spent: false,
            unscripted: None,
            tokens: Default::default(),
            prompt: Default::default(),
            last: None,
        }
    }

    /// Draw the scripted model's alternatives from `seed` instead of the
    /// case seed.
    pub fn set_seed(&mut self, seed: u64) {
        self.scripted.reseed(model_stream(seed));
    }

    /// A `recorded` provider without its own `recording` reads the store's
    /// runs, except the bundle this run writes; so does one whose
    /// `recording` is not there, the case read back from the store for a
    /// fork, `repro` or `rerun` (its folder is not the one the recording
    /// was beside; a new run's missing recording is refused before it
    /// starts).
    pub fn use_store(&mut self, runs: PathBuf, own: Option<PathBuf>) {
        if self.config.provider != Provider::Recorded {
            return;
        }
        if (self.recording.as_ref()).is_some_and(|r| !r.source().exists()) {
            self.recording = None;
        }
        let recording = self
            .recording
            .get_or_insert_with(|| recorded::HashCassette::new(runs));
        if let Some(own) = own {
            recording.skip(own);
        }
    }

    /// Whether answers come from outside (and so, when following a
    /// recording, from the log).
    fn is_live(label: &str) -> bool {
        label == Provider::Openai.as_str() || label == Provider::Recorded.as_str()
    }

    /// The provider that answers.
    pub fn provider(&self) -> Provider {
        self.config.provider
    }

    /// The base URL the case declares for its endpoint, if any (an agent
    /// reaching it over `wasi:http` is answered like the vendor's URL).
    pub fn base_url(&self) -> Option<&str> {
        self.config.base_url.as_deref()
    }

    /// Whether the last call used the case's whole time budget (and reset).
    pub(in crate::mediate) fn take_budget_spent(&mut self) -> bool {
        std::mem::take(&mut self.budget_spent)
    }

    /// A call a fork's edit answered (`request` as it was sent): it counts
    /// as a call, and with the scripted provider the reply it would have
    /// had is passed over, so the calls after it are answered as in the
    /// parent. No other provider is asked. The virtual time (ms) the call
    /// would have taken.
    pub(in crate::mediate) fn pass_over(&mut self, request: &Value) -> u64 {
        self.calls += 1;
        let mut latency = self.config.latency_ms;
        if matches!(self.config.provider, Provider::Scripted) {
            // Its reply is passed over; why there is none is not said.
            if let Ok(chosen) = self.scripted.choose(request, rules::CURRENT) {
                latency = chat::table(&chosen.reply).latency_ms.unwrap_or(latency);
            }
        }
        latency
    }

    /// Answer `request` with the case's provider. `wall_ns` is virtual now;
    /// `seq` the `model.complete` event the call is recorded as (`None`:
    /// recorded elsewhere, a judge's or a simulated user's call).
    pub fn serve(&mut self, request: &Value, wall_ns: i128, seq: Option<u64>) -> ServiceReply {
        self.serve_as(request, wall_ns, seq, false, rules::CURRENT)
    }

    /// [`serve`](Self::serve) under a run's `rules`; `appended`: `request`
    /// holds only the messages it appended to the last one's (a request
    /// read as resent, decision 0392; the scripted model only).
    fn serve_as(
        &mut self,
        request: &Value,
        wall_ns: i128,
        seq: Option<u64>,
        appended: bool,
        rules: u32,
    ) -> ServiceReply {
        self.calls += 1;
        let (response, latency_ms) = match self.config.provider {
            Provider::Scripted => self.scripted_answer(request, wall_ns, seq, appended, rules),
            Provider::Openai => self.endpoint_answer(request, None, seq, rules),
            Provider::Recorded => self.recorded_answer(request, seq, rules),
        };
        let effect = if response.get("error").is_some() {
            Effect::Failed
        } else {
            Effect::Read
        };
        ServiceReply {
            latency_ns: super::clock::ns_of_ms(latency_ms),
            ..ServiceReply::with_effect(response, effect)
        }
    }

    fn scripted_answer(
        &mut self,
        request: &Value,
        wall_ns: i128,
        seq: Option<u64>,
        appended: bool,
        rules: u32,
    ) -> (Value, u64) {
        let chosen = match self.scripted.choose(request, rules) {
            Ok(c) => c,
            Err(message) => {
                self.unscripted = Some(scripted::unmatched(&message, request, rules));
                let mut r = error_answer(ErrorKind::Unavailable, message).response;
                r["model_call"] = json!({"provider": "scripted"});
                return (r, self.config.latency_ms);
            }
        };
        let reply = chat::table(&chosen.reply);
        let latency = reply.latency_ms.unwrap_or(self.config.latency_ms);
        let mut record = json!({
            "provider": "scripted",
            "source": chosen.source,
            "params": chat::params(request),
            "virtual_latency_ms": latency,
        });
        if let Some(kind) = &reply.error {
            let message = format!("the scripted model answered `{kind}`");
            let mut r = error_answer(ErrorKind::named(kind), message).response;
            if let Some(status) = reply.status {
                r["error"]["status"] = json!(status);
            }
            r["model_call"] = record;
            return (r, latency);
        }
        let created = i64::try_from(wall_ns.div_euclid(1_000_000_000)).unwrap_or(0);
        let prompt = self.prompt.tokens(request, seq, appended);
        let mut completion = chat::completion(&reply, prompt, self.calls, created);
        if rules >= rules::SCRIPTED_MODEL_ANSWERS_N_CHOICES {
            chat::as_choices(&mut completion, &request["n"]);
        }
        record["model"] = completion["model"].clone();
        record["usage"] = completion["usage"].clone();
        record["finish_reason"] = chat::finish_reason(&completion);
        let mut answer = crate::mediate::ok(completion);
        answer["model_call"] = record;
        (answer, latency)
    }

    /// Ask the endpoint; `cassette` notes why a recorded provider called out.
    fn endpoint_answer(
        &mut self,
        request: &Value,
        cassette: Option<&str>,
        seq: Option<u64>,
        rules: u32,
    ) -> (Value, u64) {
        let latency = self.config.latency_ms;
        let Some(endpoint) = &self.endpoint else {
            let r = error_answer(
                ErrorKind::Failed,
                "no endpoint is configured ([model] base_url)",
            );
            return (r.response, latency);
        };
        // A call recorded as a `model.complete` event holds the agent's
        // request beside the body sent: from rules 11 the body is recorded
        // as what it changed (decision 0430).
        let changes = seq.is_some() && rules >= rules::RENDERED_AS_CHANGES;
        let outcome = endpoint.complete(request, changes);
        self.budget_spent = outcome.budget_spent;
        let mut record = outcome.record;
        record["virtual_latency_ms"] = json!(latency);
        if let Some(c) = cassette {
            record["cassette"] = json!(c);
        }
        let mut response = match outcome.answer {
            Ok(v) if rules >= rules::NO_CHOICE_FAILS && chat::no_choice(&v) => {
                let message = format!(
                    "the endpoint's answer has no choice (`choices` is empty): {}",
                    worldline_case::shown::text(&worldline_case::canon::to_string(&v))
                );
                error_answer(ErrorKind::Failed, message).response
            }
            Ok(mut v) => {
                if self.config.token_ids {
                    self.take_tokens(&mut v, &mut record, request, seq, rules);
                }
                crate::mediate::ok(v)
            }
            Err((kind, message)) => error_answer(kind, message).response,
        };
        response["model_call"] = record;
        (response, latency)
    }

    /// Move the token ids of `completion` into `record.tokens` (decision
    /// 0350), as the run's `rules` take them; the raw answer, which holds
    /// them again, is then recorded by its SHA-256 only.
    fn take_tokens(
        &mut self,
        completion: &mut Value,
        record: &mut Value,
        request: &Value,
        seq: Option<u64>,
        rules: u32,
    ) {
        let asked = !matches!(
            request.get("logprobs"),
            None | Some(Value::Null | Value::Bool(false))
        );
        let Some(mut t) = worldline_log::log::tokens::take(completion, asked, rules) else {
            return;
        };
        t.tokenizer = self
            .config
            .tokenizer
            .clone()
            .or_else(|| completion["model"].as_str().map(str::to_string));
        t.chat_template = self.config.chat_template.clone();
        record["tokens"] = self.tokens.record(seq, &t);
        if let Some(raw) = record.as_object_mut().and_then(|r| r.remove("raw")) {
            let text = raw.as_str().unwrap_or_default();
            record["raw_sha256"] = json!(canon::sha256_hex(text.as_bytes()));
            record["raw_bytes"] = json!(text.len());
        }
    }

    fn recorded_answer(&mut self, request: &Value, seq: Option<u64>, rules: u32) -> (Value, u64) {
        let latency = self.config.latency_ms;
        if self.config.cassette == CassetteMode::All {
            return self.endpoint_answer(request, Some("all"), seq, rules);
        }
        let Some(recording) = self.recording.as_mut() else {
            let r = error_answer(
                ErrorKind::Failed,
                "the recorded provider has no recording: set [model] recording or run with a store",
            );
            return (r.response, latency);
        };
        if let Some(mut hit) = recording.answer(request) {
            hit["model_call"]["virtual_latency_ms"] = json!(latency);
            return (hit, latency);
        }
        if self.config.cassette == CassetteMode::Once {
            return self.endpoint_answer(request, Some("miss"), seq, rules);
        }
        let message = format!(
            "no recorded answer for this request (key {}) in {}; the cassette is `none`, so nothing is asked live (set [model] cassette = \"once\" to record misses)",
            recorded::key(request),
            recording.source().display()
        );
        let mut r = error_answer(ErrorKind::Unavailable, message).response;
        r["model_call"] = json!({"provider": "recorded", "key": recorded::key(request)});
        (r, latency)
    }
}

/// A rerun's cassette: the model answers of the recording it reruns, used
/// in order while the agent's requests equal the recorded ones. The
/// recording is held compact (decision 0380): each request is put back
/// when the agent's is compared with it, one at a time.
pub struct RerunCassette {
    /// The recorded run's events, held compact.
    pub recording: Held,
    /// The seqs of its model calls, in order.
    pub calls: Vec<u64>,
    pub next: usize,
    /// Once a request differs: stop the run (`true`) or ask the case's
    /// provider (`false`).
    pub fail_on_miss: bool,
    /// Set once a request differed; from then on the recording is not used.
    pub missed: bool,
}

impl RerunCassette {
    /// The recorded answer for this request, if the recording still holds.
    fn peek(&mut self, request: &Value) -> Option<Value> {
        if self.missed {
            return None;
        }
        let seq = *self.calls.get(self.next)?;
        let same = self.recording.request(seq)?.get("request") == Some(request);
        same.then(|| self.recording.get(seq).map(|e| e.response.clone()))?
    }

    /// After a call went through: move past its answer, or stop using the
    /// recording once a request differed.
    fn advance(&mut self, hit: bool) {
        if self.missed {
            return;
        }
        if hit {
            self.next += 1;
        } else {
            self.missed = true;
        }
    }
}

impl RunState {
    /// One model call, however it arrived: `request` is the agent's
    /// chat-completions JSON, `transport` how it came when not through
    /// `model.complete` (recorded beside it; `None` keeps the event as it
    /// always was). Returns the recorded response (`{"ok"}`/`{"error"}`).
    pub(in crate::mediate) fn model_call(
        &mut self,
        request: Value,
        transport: Option<Transport>,
    ) -> wasmtime::Result<Answered<ModelAnswer>> {
        // A replay or fork of a rerun follows the calls its cassette
        // answered as the rerun recorded them: answered from the log.
        let followed = (self.med.services.model.cassette.is_none())
            .then(|| self.med.followed_provider())
            .flatten()
            .and_then(|p| [FROM_RECORDING, MISSED].into_iter().find(|l| *l == p));
        let service = &mut self.med.services.model;
        let rerun = service
            .cassette
            .as_mut()
            .map(|c| (c.peek(&request), c.fail_on_miss));
        let label = match (&rerun, followed) {
            (_, Some(label)) => label,
            (Some((Some(_), _)), _) => FROM_RECORDING,
            (Some((None, true)), _) => MISSED,
            _ => service.config.provider.as_str(),
        };
        let miss = label == MISSED;
        let call_request = ModelRequest {
            provider: label.to_string(),
            request: Value::Null,
            transport,
            detail: Default::default(),
        };
        let message = "the agent's model request differs from the recording and the rerun was asked to stop there (--model fail)";
        let hit = matches!(rerun, Some((Some(_), _)));
        let seq = self.med.recorder.len();
        let serve = |s: &mut super::HostServices, recorded: &Value| {
            if let Some((Some(response), _)) = rerun {
                // The clock moves as it did when the answer was recorded.
                let ms = response["model_call"]["virtual_latency_ms"].as_u64();
                return ServiceReply {
                    latency_ns: super::clock::ns_of_ms(ms.unwrap_or(0)),
                    ..ServiceReply::read(response)
                };
            }
            if miss {
                return error_answer(ErrorKind::Unavailable, message);
            }
            let (now, rules) = (s.clock.wall_ns(), s.rules);
            s.model
                .serve_as(&recorded["request"], now, Some(seq), false, rules)
        };
        // The conversation is moved into the recorded request, not copied.
        let live = ModelService::is_live(label) || followed.is_some();
        let r = self
            .med
            .call_moving::<kind::ModelComplete>(&call_request, ("request", request), live, serve)
            .map_err(wasmtime::Error::new)?;
        self.after_model_call(hit, miss)?;
        Ok(r)
    }

    /// A `model.complete` request that is no JSON object, refused as
    /// OpenAI refuses such a body (`why`, its 400's message) from rules 10
    /// ([`rules::MODEL_REQUEST_MUST_BE_AN_OBJECT`]): recorded as a model
    /// call answered `invalid-args` with `status` 400, no provider asked
    /// and no scripted reply taken.
    fn refused_request(
        &mut self,
        request: Value,
        why: String,
    ) -> wasmtime::Result<Answered<ModelAnswer>> {
        // A rerun's recording keeps in step: the call it recorded for this
        // request is passed over (or, if it differs, the recording left).
        if let Some(c) = self.med.services.model.cassette.as_mut() {
            let hit = c.peek(&request).is_some();
            c.advance(hit);
        }
        let call_request = ModelRequest {
            provider: self.med.services.model.config.provider.as_str().to_string(),
            request: Value::Null,
            transport: None,
            detail: Default::default(),
        };
        let serve = move |_: &mut super::HostServices, _: &Value| {
            let mut r = error_answer(ErrorKind::InvalidArgs, why);
            r.response["error"]["status"] = json!(400);
            r
        };
        (self.med)
            .call_moving::<kind::ModelComplete>(&call_request, ("request", request), false, serve)
            .map_err(wasmtime::Error::new)
    }

    /// After a model call is recorded: the rerun's cassette moved on, and
    /// the stop the call asked for, if any.
    fn after_model_call(&mut self, hit: bool, miss: bool) -> wasmtime::Result<()> {
        let service = &mut self.med.services.model;
        if let Some(cassette) = service.cassette.as_mut() {
            cassette.advance(hit);
        }
        if std::mem::take(&mut service.budget_spent) {
            return Err(wasmtime::Error::new(super::Stop::Timeout(
                "a model call".into(),
            )));
        }
        if miss {
            // The model call just recorded, answered as a miss.
            let seq = self.med.recorder.len().saturating_sub(1);
            return Err(wasmtime::Error::new(super::Stop::ModelMiss(seq)));
        }
        if let Some(why) = service.unscripted.take() {
            return Err(wasmtime::Error::new(super::Stop::Unscripted(why)));
        }
        Ok(())
    }

    /// A `model.complete` request read against the latest one's text
    /// (decision 0392): when it resends that one's conversation and
    /// appends messages to it, and nothing needs it whole (the scripted
    /// model answers, no rerun cassette, the chain hashes lines, a
    /// followed recording holds the call compact the same way), the call
    /// is made with the compact request, its messages parsed from the
    /// appended bytes only. `None`: read the request whole.
    fn resent_call(&mut self, text: &str) -> Option<(Value, Value, Extends, resent::Tail)> {
        let service = &self.med.services.model;
        if service.cassette.is_some() || service.config.provider != Provider::Scripted {
            return None;
        }
        let last = service.last.as_ref()?;
        let count = last.count();
        if self.med.latest_chat() != Some((last.seq, count))
            || !service.prompt.counted(last.seq, count)
        {
            return None;
        }
        let (appended, tail) = last.resent(text)?;
        // The scripted model reads the last user or tool message.
        let input = |m: &Value| matches!(m["role"].as_str(), Some("user" | "tool"));
        if !appended.iter().any(input) {
            return None;
        }
        let x = Extends::new(last.seq, count, last.fields.keys().cloned().collect());
        let mut view = last.fields.clone();
        view.insert("messages".into(), Value::Array(appended.clone()));
        let mut chat = serde_json::Map::new();
        chat.insert("messages".into(), Value::Array(appended));
        let mut request = serde_json::to_value(ModelRequest {
            provider: service.config.provider.as_str().to_string(),
            request: Value::Null,
            transport: None,
            detail: Default::default(),
        })
        .ok()?;
        request
            .as_object_mut()?
            .insert("request".into(), Value::Object(chat));
        if !self.med.follows_extending(&request, &x) {
            return None;
        }
        Some((request, Value::Object(view), x, tail))
    }
}

impl model::Host for RunState {
    fn complete(&mut self, request_json: String) -> wasmtime::Result<Result<String, ToolError>> {
        let seq = self.med.recorded();
        let r = match self.resent_call(&request_json) {
            Some((request, view, x, tail)) => {
                let serve = |s: &mut super::HostServices, _: &Value| {
                    let (now, rules) = (s.clock.wall_ns(), s.rules);
                    s.model.serve_as(&view, now, Some(seq), true, rules)
                };
                let r = (self.med)
                    .call_extending::<kind::ModelComplete>(request, x, serve)
                    .map_err(wasmtime::Error::new)?;
                self.after_model_call(false, false)?;
                if let Some(last) = self.med.services.model.last.as_mut() {
                    last.advance(seq, request_json, tail);
                }
                r
            }
            None => {
                let (request, refusal) = match serde_json::from_str(&request_json) {
                    Ok(v @ Value::Object(_)) => (v, None),
                    Ok(v) => (
                        v,
                        Some("The request body must be a JSON object.".to_string()),
                    ),
                    Err(e) => (
                        Value::String(request_json.clone()),
                        Some(format!(
                            "We could not parse the JSON body of your request. ({e})"
                        )),
                    ),
                };
                if let Some(why) =
                    refusal.filter(|_| self.med.rules() >= rules::MODEL_REQUEST_MUST_BE_AN_OBJECT)
                {
                    self.med.services.model.last = None;
                    let r = self.refused_request(request, why)?;
                    return Ok(Err(super::agent_api::error_of(
                        r.typed.error.as_ref().expect("a refusal is an error"),
                    )));
                }
                let service = &self.med.services.model;
                let keep =
                    service.cassette.is_none() && service.config.provider == Provider::Scripted;
                let last = keep
                    .then(|| resent::Last::of(seq, request_json, &request))
                    .flatten();
                let r = self.model_call(request, None)?;
                self.med.services.model.last = last;
                r
            }
        };
        Ok(match &r.typed.error {
            Some(e) => Err(super::agent_api::error_of(e)),
            None => Ok(canon::to_string(
                r.typed.ok.as_ref().unwrap_or(&Value::Null),
            )),
        })
    }
}
