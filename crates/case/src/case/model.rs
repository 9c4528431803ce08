//! The case's `[model]` table: which provider answers the agent's model
//! calls and how — a script of replies and rules (`scripted`), an
//! OpenAI-compatible endpoint (`openai`), or earlier runs (`recorded`) —
//! and `--model-set KEY=VALUE` overrides from the command line.

use crate::error::InputError;
use crate::error_kind::ErrorKind;
use crate::path::JsonPath;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Who answers `model.complete`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// Replies from the case: in order, or by rule. Needs no network.
    #[default]
    Scripted,
    /// An OpenAI-compatible chat-completions endpoint.
    Openai,
    /// Answers from earlier runs, keyed by a hash of the request.
    Recorded,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Scripted => "scripted",
            Provider::Openai => "openai",
            Provider::Recorded => "recorded",
        }
    }
}

/// What the `recorded` provider does with a request it has no answer for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CassetteMode {
    /// Never call out: a miss is an error the agent sees.
    #[default]
    None,
    /// Ask the endpoint on a miss; the answer is recorded in this run.
    Once,
    /// Ask the endpoint every time (re-record).
    All,
}

/// The `[model]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    pub provider: Provider,
    /// Virtual time each model call takes, in milliseconds.
    pub latency_ms: u64,
    /// `scripted`: replies used in order when no rule matches.
    pub responses: Vec<Reply>,
    /// `scripted`: rules tried in order before `responses`.
    pub rules: Vec<Rule>,
    /// `openai`: the endpoint, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// `openai`: the model name sent (overrides the agent's `model`).
    pub model: Option<String>,
    /// `openai`: the environment variable holding the API key (the key
    /// itself is never written anywhere).
    pub api_key_env: Option<String>,
    /// `openai`: real-time limit of one attempt, in milliseconds.
    pub timeout_ms: u64,
    /// `openai`: attempts after the first on 429, 5xx, timeouts and
    /// connection errors.
    pub retries: u32,
    /// `openai`: most calls in flight to this endpoint from one process
    /// (all runs of a suite or campaign together); `None`: no limit.
    pub max_connections: Option<u32>,
    /// `recorded`: a bundle or a folder of bundles (relative to the case
    /// file); default: the store's runs.
    pub recording: Option<String>,
    pub cassette: CassetteMode,
    /// `openai`: ask the endpoint for the prompt's and the completion's
    /// token ids and log-probabilities (vLLM's `return_token_ids`,
    /// `logprobs`) and record them with the call (decision 0350).
    #[serde(skip_serializing_if = "is_false")]
    pub token_ids: bool,
    /// The tokenizer the endpoint uses, as the case declares it (recorded
    /// with the token ids; default: the model the endpoint names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// The chat template that made the prompt, as the case declares it (a
    /// name or a hash; recorded with the token ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            provider: Provider::Scripted,
            latency_ms: 0,
            responses: Vec::new(),
            rules: Vec::new(),
            base_url: None,
            model: None,
            api_key_env: None,
            timeout_ms: 30_000,
            retries: 2,
            max_connections: None,
            recording: None,
            cassette: CassetteMode::None,
            token_ids: false,
            tokenizer: None,
            chat_template: None,
        }
    }
}

/// One scripted reply: a text, or a table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Reply {
    Text(String),
    Full(ReplyTable),
}

/// Text, or a table read as [`ReplyTable`], so that an unknown key is
/// refused by name with the keys allowed (an untagged enum would only say
/// that nothing matched), at its own line: the table is read from the
/// file's own reader, which knows where each key is (read through a
/// `Value` first, every entry's problem was placed at the first entry).
impl<'de> Deserialize<'de> for Reply {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, Visitor, value::MapAccessDeserializer};
        struct Form;
        impl<'de> Visitor<'de> for Form {
            type Value = Reply;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a reply's text, or a table (`content`, `tool_calls`, ...)")
            }
            fn visit_str<E: Error>(self, text: &str) -> Result<Reply, E> {
                Ok(Reply::Text(text.to_string()))
            }
            fn visit_string<E: Error>(self, text: String) -> Result<Reply, E> {
                Ok(Reply::Text(text))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Reply, A::Error> {
                ReplyTable::deserialize(MapAccessDeserializer::new(map)).map(Reply::Full)
            }
        }
        d.deserialize_any(Form)
    }
}

/// A scripted reply with tool calls, or a scripted provider error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplyTable {
    pub content: Option<String>,
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Default: `tool_calls` when there are tool calls, else `stop`.
    pub finish_reason: Option<String>,
    /// Answer with this error kind instead (`timeout`, `unavailable`, `failed`).
    pub error: Option<String>,
    /// Virtual latency of this reply (default: `[model] latency_ms`).
    pub latency_ms: Option<u64>,
    /// With `error`: the HTTP status an agent that reaches the model over
    /// HTTP receives (e.g. 429); default: the status of the error kind.
    pub status: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    pub name: String,
    /// A table (sent as JSON text, as OpenAI does) or JSON text.
    #[serde(default)]
    pub arguments: Value,
}

/// A rule: when the last user or tool message matches, reply (or pick
/// one of weighted alternatives with the run's model seed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rule {
    /// Substring of the last user/tool message's content.
    pub contains: Option<String>,
    /// Path into the last user/tool message (its `content` parsed when it
    /// is JSON text), e.g. `$.content.deploys[0].id` (syntax: `crate::path`).
    pub path: Option<String>,
    /// With `path`: the value there must equal this.
    pub equals: Option<Value>,
    pub reply: Option<Reply>,
    pub alternatives: Vec<Alternative>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alternative {
    #[serde(default = "one")]
    pub weight: u32,
    pub reply: Reply,
}

fn one() -> u32 {
    1
}

/// Where in `[model]` a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// The n-th `[[model.rules]]` (from 0).
    Rule(usize),
    /// The n-th `[[model.responses]]` (from 0).
    Response(usize),
    /// The table's own settings.
    Table,
}

impl Rule {
    /// It replies one way, its path parses, and each reply is well made.
    fn check(&self) -> Result<(), String> {
        match (&self.reply, self.alternatives.is_empty()) {
            (Some(_), false) => return Err("give `reply` or `alternatives`, not both".into()),
            (None, true) => return Err("needs `reply` or `alternatives`".into()),
            _ => {}
        }
        if self.alternatives.iter().all(|a| a.weight == 0) && self.reply.is_none() {
            return Err("every alternative has weight 0".into());
        }
        if let Some(p) = &self.path {
            JsonPath::parse(p).map_err(|m| format!("path `{p}`: {m}"))?;
        } else if self.equals.is_some() {
            return Err("`equals` needs a `path`".into());
        }
        let replies = (self.reply.iter()).chain(self.alternatives.iter().map(|a| &a.reply));
        for r in replies {
            r.check()?;
        }
        Ok(())
    }
}

/// The kinds a scripted reply may fail with (what a model endpoint can do).
const MODEL_ERRORS: [ErrorKind; 3] = [
    ErrorKind::Timeout,
    ErrorKind::Unavailable,
    ErrorKind::Failed,
];

impl ModelConfig {
    /// Whether `key = value` may stand in a `[model]` table on its own: a
    /// key the table has, a value of its type (how keys go together is
    /// checked once a case's table is whole).
    pub fn check_key(key: &str, text: &str) -> Result<(), String> {
        if let toml::Value::Float(f) = setting_value(text)
            && !f.is_finite()
        {
            return Err(format!("invalid value: `{text}` is not a finite number"));
        }
        // A whole number past TOML's integers read as text, and was
        // refused as "a string" where a whole number was asked for.
        let digits = text.trim().trim_start_matches(['+', '-']);
        if !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && text.trim().parse::<i64>().is_err()
        {
            return Err(format!(
                "invalid value: `{}` is past the whole numbers a setting takes ({} to {})",
                text.trim(),
                i64::MIN,
                i64::MAX
            ));
        }
        let one = serde_json::json!({ key: override_value(text) });
        let c = serde_json::from_value::<ModelConfig>(one)
            .map_err(|e| crate::error::in_words(&e.to_string()))?;
        // What a key's value alone can break (worldline.toml's `[model]`
        // was checked only once applied to a case, and `check` passed it).
        match c.base_url.as_deref().and_then(base_url_problem) {
            Some(m) if key == "base_url" => Err(m),
            _ => Ok(()),
        }
    }

    /// Check what serde cannot: each rule replies one way, paths parse,
    /// and the provider has what it needs (the first problem).
    pub fn check(&self) -> Result<(), String> {
        match self.problems().into_iter().next() {
            Some((_, m)) => Err(m),
            None => Ok(()),
        }
    }

    /// Every problem [`check`](Self::check) finds, each with the rule or
    /// response it is in (one problem of each at most), in the file's
    /// order: rules, responses, then the table's own settings.
    pub fn problems(&self) -> Vec<(Entry, String)> {
        let mut out = Vec::new();
        if let Err(m) = super::recorded::check_ms("[model] latency_ms", self.latency_ms) {
            out.push((Entry::Table, m));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if let Err(m) = rule.check() {
                out.push((Entry::Rule(i), format!("[[model.rules]] #{}: {m}", i + 1)));
            }
        }
        for (i, r) in self.responses.iter().enumerate() {
            if let Err(m) = r.check() {
                out.push((
                    Entry::Response(i),
                    format!("[model] responses #{}: {m}", i + 1),
                ));
            }
        }
        if let Err(m) = self.check_settings() {
            out.push((Entry::Table, m));
        }
        out
    }

    /// The provider has what it needs, and its settings are in range.
    fn check_settings(&self) -> Result<(), String> {
        if self.calls_out() && self.base_url.is_none() {
            return Err(format!(
                "[model] provider `{}`{} needs `base_url` (e.g. \"http://127.0.0.1:11434/v1\")",
                self.provider.as_str(),
                if self.provider == Provider::Recorded {
                    " with a cassette that records"
                } else {
                    ""
                }
            ));
        }
        if let Some(m) = self.base_url.as_deref().and_then(base_url_problem) {
            return Err(format!("[model] base_url {m}"));
        }
        if self.timeout_ms == 0 {
            return Err("[model] timeout_ms must be above zero".into());
        }
        Ok(())
    }

    /// Every tool a scripted reply calls, with where the reply is (its
    /// entry, and that said: `[[model.rules]] #2`, `[model] responses
    /// #1`), in the file's order.
    pub fn scripted_tool_calls<'a>(&'a self) -> Vec<(Entry, String, &'a str)> {
        let mut out = Vec::new();
        let mut add = |entry: Entry, at: String, r: &'a Reply| {
            if let Reply::Full(t) = r {
                out.extend((t.tool_calls.iter()).map(|c| (entry, at.clone(), c.name.as_str())));
            }
        };
        for (i, rule) in self.rules.iter().enumerate() {
            let at = format!("[[model.rules]] #{}", i + 1);
            for r in rule
                .reply
                .iter()
                .chain(rule.alternatives.iter().map(|a| &a.reply))
            {
                add(Entry::Rule(i), at.clone(), r);
            }
        }
        for (i, r) in self.responses.iter().enumerate() {
            add(
                Entry::Response(i),
                format!("[model] responses #{}", i + 1),
                r,
            );
        }
        out
    }

    /// Whether the provider may ask an endpoint: `openai`, or `recorded`
    /// with a cassette that records.
    pub fn calls_out(&self) -> bool {
        self.provider == Provider::Openai
            || (self.provider == Provider::Recorded && self.cassette != CassetteMode::None)
    }

    /// Apply `--model-set KEY=VALUE` overrides (VALUE is read as a TOML value
    /// when it is one, else as text).
    pub fn with_overrides(&self, overrides: &BTreeMap<String, String>) -> Result<Self, String> {
        if overrides.is_empty() {
            return Ok(self.clone());
        }
        let mut table = serde_json::to_value(self).map_err(|e| e.to_string())?;
        for (key, text) in overrides {
            table[key.as_str()] = override_value(text);
        }
        let config: ModelConfig = serde_json::from_value(table).map_err(|e| {
            let e = crate::error::in_words(&e.to_string());
            format!("--model-set {}: {e}", describe(overrides))
        })?;
        config.check()?;
        Ok(config)
    }

    /// The API key's environment variable, when it is named but not set.
    pub fn missing_key(&self) -> Option<&str> {
        let name = self.api_key_env.as_deref()?;
        (self.calls_out() && std::env::var_os(name).is_none_or(|v| v.is_empty())).then_some(name)
    }

    /// Why the `recording` a `recorded` provider names (relative to
    /// `case_dir`) cannot be read, if it cannot: it must be a bundle or a
    /// folder of them; the advice names `relative_to`, the file that named
    /// it (`the case file`, or the project file's `this file`). Checked
    /// before a live run, not when a recorded case is read back (a replay
    /// never reads it).
    pub fn unreadable_recording(&self, case_dir: &Path, relative_to: &str) -> Option<String> {
        let named = self.recording.as_deref()?;
        if self.provider != Provider::Recorded {
            return None;
        }
        let path = case_dir.join(named);
        let why = match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => return None,
            Ok(m) if m.is_file() => no_bundle(&path)?,
            Ok(_) => "is not a regular file nor a folder".to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_string(),
            Err(e) => e.to_string(),
        };
        // A path made absolute already (the project file's) is said once.
        let whole = match path == Path::new(named) {
            true => String::new(),
            false => format!(" ({})", path.display()),
        };
        Some(format!(
            "[model] recording `{named}`{whole} {why}; name a recorded run's bundle (.jsonl) or a folder of them, relative to {relative_to}"
        ))
    }
}

/// Why the file at `path` is no run's bundle, when its first bytes say so:
/// empty, or not beginning as a bundle's header (a file of notes was taken,
/// and every request then missed with advice to record). Only the first
/// bytes are read.
fn no_bundle(path: &Path) -> Option<String> {
    use std::io::Read as _;
    const HEAD: &[u8] = br#"{"header":"#;
    let mut first = Vec::new();
    let read = crate::bounded::open(path)
        .map_err(|e| e.to_string())
        .and_then(|f| {
            (f.take(HEAD.len() as u64).read_to_end(&mut first)).map_err(|e| e.to_string())
        });
    match read {
        Err(e) => Some(e),
        Ok(_) if first.is_empty() => Some("is empty, no run's bundle".into()),
        Ok(_) if first != HEAD => Some(
            "is not a run's bundle (it does not begin with a bundle's header, `{\"header\":`)"
                .into(),
        ),
        Ok(_) => None,
    }
}

/// Check a project file's `[model]` and `[user_model]` keys where they
/// are written, as their flags will read them: at a run a mistake would
/// be blamed on the case and on a flag never given.
pub fn check_settings(project: &crate::project::Project) -> Result<(), InputError> {
    match setting_problems(project).into_iter().next() {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// Every problem [`check_settings`] finds, each at its key or value.
pub fn setting_problems(project: &crate::project::Project) -> Vec<InputError> {
    let problem = |s: &crate::project::Setting| {
        let e = ModelConfig::check_key(&s.key, &s.value).err()?;
        let at = match e.starts_with("unknown field") {
            true => s.key_at,
            false => s.value_at,
        };
        Some(InputError {
            file: project.file.clone(),
            line: Some(at),
            message: format!("[{}] {}: {e}", s.table, s.key),
            store: false,
        })
    };
    project.settings.iter().filter_map(problem).collect()
}

/// What is wrong with a `base_url`, said after its name: not HTTP, or
/// credentials in it (they would be recorded in the run, its header, the
/// errors the agent reads, OTel's spans, and shown by every reader: only
/// `api_key_env` names a secret, and never records it).
fn base_url_problem(url: &str) -> Option<String> {
    // Credentials first: the other message quotes the URL.
    let authority = url
        .split_once("://")
        .map(|(_, r)| r)
        .and_then(|r| r.split(['/', '?', '#']).next());
    if authority.is_some_and(|a| a.contains('@')) {
        return Some("carries credentials (`user:password@` before its host): the base URL is recorded in the run and read by the agent and every view of it; give the key with `api_key_env`, whose value is never recorded".to_string());
    }
    (!(url.starts_with("http://") || url.starts_with("https://")))
        .then(|| format!("`{url}` must start with http:// or https://"))
}

/// A `--model-set` value: read as a TOML value when it is one, else as
/// text.
pub fn setting_value(text: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

/// [`setting_value`] as JSON.
fn override_value(text: &str) -> Value {
    serde_json::to_value(setting_value(text)).unwrap_or(Value::Null)
}

fn describe(overrides: &BTreeMap<String, String>) -> String {
    overrides
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One `--model-set KEY=VALUE` (or `--user-model-set`) as given, its key
/// and value checked as a `[model]` key: a mistake is the flag's, said
/// before any case is read (clap's `value_parser`).
pub fn check_override(arg: &str) -> Result<String, String> {
    let (k, v) = split_override(arg)
        .ok_or_else(|| "expected KEY=VALUE, e.g. provider=openai".to_string())?;
    ModelConfig::check_key(k, v).map_err(|e| format!("{k}: {e}"))?;
    Ok(arg.to_string())
}

/// An override's key (trimmed) and value.
fn split_override(arg: &str) -> Option<(&str, &str)> {
    arg.split_once('=').map(|(k, v)| (k.trim(), v))
}

/// Split `--model-set KEY=VALUE` arguments.
pub fn parse_overrides(args: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for a in args {
        let (k, v) = split_override(a).ok_or_else(|| {
            format!("--model-set `{a}`: expected KEY=VALUE, e.g. --model-set provider=openai")
        })?;
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

impl Reply {
    fn check(&self) -> Result<(), String> {
        if let Reply::Full(t) = self {
            if let Some(kind) = &t.error
                && !MODEL_ERRORS.iter().any(|k| k.as_str() == kind)
            {
                let names: Vec<&str> = MODEL_ERRORS.iter().map(|k| k.as_str()).collect();
                return Err(format!("error `{kind}` is not one of {}", names.join(", ")));
            }
            if let Some(status) = t.status {
                if t.error.is_none() {
                    return Err(format!("`status = {status}` needs an `error` kind"));
                }
                if !(400..=599).contains(&status) {
                    return Err(format!(
                        "`status = {status}` is not an HTTP error status (400-599)"
                    ));
                }
            }
            if t.error.is_none() && t.content.is_none() && t.tool_calls.is_empty() {
                return Err("a reply needs `content`, `tool_calls` or `error`".into());
            }
            if let Some(ms) = t.latency_ms {
                super::recorded::check_ms("latency_ms", ms)?;
            }
            if super::recorded::new_rules_apply() {
                t.check_shape()?;
            }
        }
        Ok(())
    }
}

/// The finish reasons a scripted reply may give (Chat Completions').
const FINISH_REASONS: [&str; 4] = ["stop", "length", "tool_calls", "content_filter"];

impl ReplyTable {
    /// The finish reason is one the APIs know, and each tool call's
    /// arguments are an object (a table, or JSON text of one): invalid JSON
    /// text, a number or a list reached the agent as they were (and an
    /// Anthropic agent's `input` as `{}`, a number or a list).
    fn check_shape(&self) -> Result<(), String> {
        if let Some(f) = self
            .finish_reason
            .as_deref()
            .filter(|f| !FINISH_REASONS.contains(f))
        {
            return Err(format!(
                "finish_reason `{f}` is not one of {}",
                FINISH_REASONS.join(", ")
            ));
        }
        for (i, call) in self.tool_calls.iter().enumerate() {
            let at = || format!("tool_calls #{} (`{}`): arguments", i + 1, call.name);
            match &call.arguments {
                Value::Null | Value::Object(_) => {}
                Value::String(text) => match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(_)) => {}
                    Ok(other) => {
                        return Err(format!(
                            "{} are JSON text of {}, not of an object: give a table, or JSON text of an object",
                            at(),
                            crate::path::kind_of(&other)
                        ));
                    }
                    Err(e) => {
                        return Err(format!(
                            "{} are not JSON ({e}): give a table, or JSON text of an object",
                            at()
                        ));
                    }
                },
                other => {
                    return Err(format!(
                        "{} are {}: give a table, or JSON text of an object",
                        at(),
                        crate::path::kind_of(other)
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[model]` and `[user_model]` keys are checked where they are
    /// written, as the flag they become reads them; `run` blamed a
    /// mistake on the case and on a `--model-set` never given.
    #[test]
    fn model_settings_are_checked_at_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(crate::project::FILE);
        let at = |text: &str| {
            std::fs::write(&file, text).unwrap();
            let e = check_settings(&crate::project::load(&file).unwrap()).unwrap_err();
            (e.line, e.message)
        };
        let (line, message) = at("jobs = 2\n[model]\nprovider = \"openai\"\n  provder = \"x\"\n");
        assert_eq!(line, Some((4, 3)), "{message}");
        assert!(
            message.starts_with("[model] provder: unknown field `provder`"),
            "{message}"
        );
        let (line, message) = at("[user_model]\nretries = \"many\"\n");
        assert_eq!(line, Some((2, 11)), "{message}");
        assert!(
            message.contains("[user_model] retries: invalid type"),
            "{message}"
        );
        // As `--model-set retries=3` reads it: a number.
        std::fs::write(&file, "[model]\nretries = \"3\"\ntimeout_ms = 500\n").unwrap();
        let p = crate::project::load(&file).unwrap();
        check_settings(&p).unwrap();
        assert_eq!(p.model["retries"], "3");
        // A base URL that is not HTTP, or that carries credentials, at its
        // line (`check` passed both; `test` refused them once applied to a
        // case), the credentials never echoed.
        let (line, message) = at("[model]\nprovider = \"openai\"\nbase_url = \"localhost:1/v1\"\n");
        assert_eq!(line, Some((3, 12)), "{message}");
        assert!(message.contains("must start with http://"), "{message}");
        let (line, message) = at("[model]\nbase_url = \"http://u:pw@h/v1\"\n");
        assert_eq!(line, Some((2, 12)), "{message}");
        assert!(
            message.contains("carries credentials") && !message.contains("pw"),
            "{message}"
        );
        std::fs::write(&file, "[model]\nbase_url = \"https://h/v1\"\n").unwrap();
        check_settings(&crate::project::load(&file).unwrap()).unwrap();
    }

    #[test]
    fn an_unknown_key_in_a_later_reply_is_placed_at_its_own_line() {
        #[derive(Debug, Deserialize)]
        struct Doc {
            #[allow(dead_code)]
            model: ModelConfig,
        }
        let text = "[model]\nprovider = \"scripted\"\n\n[[model.responses]]\ncontent = \"first\"\n\n[[model.responses]]\ncontent = \"second\"\ncolour = \"red\"\n";
        let e = toml::from_str::<Doc>(text).unwrap_err();
        let line = text[..e.span().unwrap().start].lines().count() + 1;
        // It was line 4, the first entry's header.
        assert_eq!(line, 9, "{e}");
        assert!(e.message().starts_with("unknown field `colour`"), "{e}");
        // A reply is still text or a table, and nothing else.
        let text = "[model]\nresponses = [\"hi\", 3]\n";
        let e = toml::from_str::<Doc>(text).unwrap_err();
        assert!(e.message().contains("a reply's text, or a table"), "{e}");
    }

    #[test]
    fn rule_paths_are_checked_when_the_case_loads() {
        let config = |path: &str| ModelConfig {
            rules: vec![Rule {
                path: Some(path.into()),
                reply: Some(Reply::Text("ok".into())),
                ..Rule::default()
            }],
            ..ModelConfig::default()
        };
        assert_eq!(config("$.content.deploys[-1].id").check(), Ok(()));
        assert_eq!(
            config("$.a[x]").check().unwrap_err(),
            "[[model.rules]] #1: path `$.a[x]`: `[x]` is not an index"
        );
        assert_eq!(
            config("$..a").check().unwrap_err(),
            "[[model.rules]] #1: path `$..a`: empty field name"
        );
    }

    #[test]
    fn overrides_are_typed_and_checked() {
        let c = ModelConfig::default();
        let o = parse_overrides(&[
            "provider=openai".into(),
            "base_url=http://127.0.0.1:9/v1".into(),
            "retries=0".into(),
        ])
        .unwrap();
        let c2 = c.with_overrides(&o).unwrap();
        assert_eq!(c2.provider, Provider::Openai);
        assert_eq!(c2.retries, 0);
        let bad = parse_overrides(&["provider=openai".into()]).unwrap();
        assert!(c.with_overrides(&bad).unwrap_err().contains("base_url"));
        // Credentials in the URL are refused without quoting them.
        let creds = parse_overrides(&[
            "provider=openai".into(),
            "base_url=http://svc:PWSECRET42@127.0.0.1:9/v1".into(),
        ])
        .unwrap();
        let message = c.with_overrides(&creds).unwrap_err();
        assert!(
            message.contains("carries credentials") && !message.contains("PWSECRET42"),
            "{message}"
        );
        let at_in_path = parse_overrides(&[
            "provider=openai".into(),
            "base_url=http://127.0.0.1:9/v1/@team".into(),
        ])
        .unwrap();
        assert!(c.with_overrides(&at_in_path).is_ok());
        assert_eq!(
            parse_overrides(&["nokey".into()]).unwrap_err(),
            "--model-set `nokey`: expected KEY=VALUE, e.g. --model-set provider=openai"
        );
        let unknown = parse_overrides(&["colour=blue".into()]).unwrap();
        assert!(c.with_overrides(&unknown).unwrap_err().contains("colour"));
    }

    #[test]
    fn an_override_is_checked_alone_and_said_in_words() {
        assert_eq!(check_override("retries=2").unwrap(), "retries=2");
        assert_eq!(
            check_override("retries=-1").unwrap_err(),
            "retries: invalid value: integer `-1`, expected a whole number from 0 to 4294967295"
        );
        assert_eq!(
            check_override("timeout_ms=1.5").unwrap_err(),
            "timeout_ms: invalid type: floating point `1.5`, expected a whole number from 0 to 18446744073709551615"
        );
        assert!(
            check_override("colour=blue")
                .unwrap_err()
                .starts_with("colour: unknown field `colour`")
        );
        assert_eq!(
            check_override("timeout_ms=nan").unwrap_err(),
            "timeout_ms: invalid value: `nan` is not a finite number"
        );
        // Past TOML's integers: it was "invalid type: string", against
        // "a whole number from 0 to 18446744073709551615".
        assert_eq!(
            check_override("latency_ms=9223372036854775808").unwrap_err(),
            "latency_ms: invalid value: `9223372036854775808` is past the whole numbers a setting takes (-9223372036854775808 to 9223372036854775807)"
        );
        assert_eq!(
            check_override("nokey").unwrap_err(),
            "expected KEY=VALUE, e.g. provider=openai"
        );
        let c = ModelConfig::default();
        let o = parse_overrides(&["retries=-1".into()]).unwrap();
        assert!(
            c.with_overrides(&o)
                .unwrap_err()
                .ends_with("expected a whole number from 0 to 4294967295"),
            "{:?}",
            c.with_overrides(&o)
        );
    }
}
