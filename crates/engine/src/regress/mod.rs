//! From an incident to a regression case: `case from-run` (a recorded run
//! made a case) and the check that a case's `[origin]` still holds (its
//! bundle copy is there, verifies and is the run it names, and the world
//! it finds is the one the run met).

pub mod from_run;
pub mod from_trace;

use serde_json::Value;
use worldline_case::case::Case;
use worldline_log::log::bundle;

/// JSON as TOML for a case `case from-run` or `case from-trace` writes,
/// `root` naming where in the case `v` goes (`inject`; empty for the whole
/// case). An integer TOML cannot hold is refused naming its place and
/// value: it was "u64 value was too large", naming nothing.
pub(crate) fn toml_value(v: &Value, root: &str) -> anyhow::Result<toml::Value> {
    if let Some((at, n)) = past_toml(v, root.to_string()) {
        anyhow::bail!(
            "{at} is the integer {n}, past what a case holds (TOML's integers run from {} to {}), so no case can be written with it; where the run or trace records it, give it as a string",
            i64::MIN,
            i64::MAX
        );
    }
    Ok(toml::Value::try_from(v)?)
}

/// The first integer in `v` that TOML cannot hold, and where it is
/// (`inject[2].response.id`).
fn past_toml(v: &Value, at: String) -> Option<(String, u64)> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .filter(|u| i64::try_from(*u).is_err())
            .map(|u| (at, u)),
        Value::Array(a) => {
            (a.iter().enumerate()).find_map(|(i, x)| past_toml(x, format!("{at}[{i}]")))
        }
        Value::Object(o) => o.iter().find_map(|(k, x)| {
            let at = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            past_toml(x, at)
        }),
        _ => None,
    }
}

/// Why the case's `[origin]` no longer backs it, one line each (empty when
/// it does, or when the case has no origin).
pub fn origin_warnings(case: &Case) -> Vec<String> {
    let Some(o) = &case.origin else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let source = o.source();
    let dir = case.path.parent().unwrap_or(std::path::Path::new("."));
    if let Some(copy) = &o.bundle {
        let copy = dir.join(copy);
        if !copy.is_file() {
            out.push(format!(
                "[origin] bundle {} is gone: the recorded model answers and the link to {source} are lost",
                copy.display()
            ));
        } else {
            match bundle::read_held(&copy) {
                Err(e) => out.push(format!(
                    "[origin] bundle {} no longer verifies: {e}",
                    copy.display()
                )),
                Ok(b) => {
                    let chain = b.footer.map(|f| f.chain_hash).unwrap_or_default();
                    if Some(&chain) != o.chain_hash.as_ref() {
                        out.push(format!(
                            "[origin] bundle {} is not {source} any more: its chain hash is {chain}, the case names {}",
                            copy.display(),
                            o.chain_hash.as_deref().unwrap_or("none")
                        ));
                    }
                }
            }
        }
    }
    if let Some(hash) = &o.world_hash
        && case.world.hash != *hash
    {
        out.push(format!(
            "world {} has changed since {source} (content hash {}, the run met {hash})",
            case.world.reference(),
            case.world.hash,
        ));
    }
    out
}
