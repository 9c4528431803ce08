//! What a native process gets of its environment besides the run's own
//! variables ([`super::exec::variables`]), in this order, a later one
//! winning: the variables that turn the vendors' SDK telemetry off
//! ([`QUIET`]), the variables passed through from worldline's own
//! environment ([`PASSED`] and `pass_env`), and the case's
//! `[env] vars`. The run's header records the case's vars as given and
//! the passed-through variables by name and SHA-256 of their values
//! (never the values), so a replay that meets other values can say which
//! names differ ([`differing`]).

use std::collections::BTreeMap;
use std::ffi::OsString;
use worldline_case::case::Case;
use worldline_log::log::bundle::ProcessEnv;

/// Variables passed through from worldline's own environment (when set).
pub const PASSED: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"];

/// Variables set by default that turn off an agent SDK's own telemetry,
/// which would otherwise send traces to the vendor from a background
/// thread (refused by the proxy, retried, and slowing every run). A case's
/// `[env] vars` or `pass_env` sets them otherwise.
pub(crate) const QUIET: &[(&str, &str)] = &[
    // The OpenAI Agents SDK (Python and JavaScript): traces to
    // https://api.openai.com/v1/traces/ingest.
    ("OPENAI_AGENTS_DISABLE_TRACING", "1"),
    // LangChain and LangGraph through LangSmith (api.smith.langchain.com):
    // the old name and the new.
    ("LANGCHAIN_TRACING_V2", "false"),
    ("LANGSMITH_TRACING", "false"),
];

/// The names passed through from worldline's environment: the fixed ones,
/// then the process's `pass_env`, each once.
fn passed_names(pass_env: &[String]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for name in PASSED
        .iter()
        .copied()
        .chain(pass_env.iter().map(String::as_str))
    {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The variables a process passed `pass_env` gets on `case` besides the
/// run's own, in the order they are set (a later one wins).
pub(crate) fn given(pass_env: &[String], case: &Case) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = QUIET
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
    for name in passed_names(pass_env) {
        if let Some(v) = std::env::var_os(name) {
            out.push((name.into(), v));
        }
    }
    for (k, v) in &case.env.vars {
        out.push((k.into(), v.into()));
    }
    out
}

/// SHA-256 of each passed-through variable that is set, by name.
fn passed_hashes(pass_env: &[String]) -> BTreeMap<String, String> {
    passed_names(pass_env)
        .into_iter()
        .filter_map(|name| {
            let value = std::env::var_os(name)?;
            let bytes = value.as_encoded_bytes();
            Some((name.to_string(), worldline_case::canon::sha256_hex(bytes)))
        })
        .collect()
}

/// What the run's header records of the environment (`None` when there
/// is nothing to record).
pub(crate) fn record(pass_env: &[String], case: &Case) -> Option<ProcessEnv> {
    let env = ProcessEnv {
        vars: case.env.vars.clone(),
        passed: passed_hashes(pass_env),
    };
    (env != ProcessEnv::default()).then_some(env)
}

/// The passed-through variables whose values now differ from those a run
/// recorded (set now and not then, or the other way round, or another
/// value), by name, each with how. Empty for a run that recorded none
/// (made before they were recorded).
pub(crate) fn differing(recorded: Option<&ProcessEnv>, pass_env: &[String]) -> Vec<String> {
    let Some(recorded) = recorded else {
        return Vec::new();
    };
    let now = passed_hashes(pass_env);
    let names: std::collections::BTreeSet<&String> =
        recorded.passed.keys().chain(now.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| match (recorded.passed.get(name), now.get(name)) {
            (Some(a), Some(b)) if a != b => Some(format!("{name} (another value)")),
            (Some(_), None) => Some(format!("{name} (unset now)")),
            (None, Some(_)) => Some(format!("{name} (unset when recorded)")),
            _ => None,
        })
        .collect()
}
