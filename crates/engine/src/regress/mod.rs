//! From an incident to a regression case: `case from-run` (a recorded run
//! made a case) and the check that a case's `[origin]` still holds (its
//! bundle copy is there, verifies and is the run it names, and the world
//! it finds is the one the run met).

pub mod from_run;
pub mod from_trace;

use worldline_case::case::Case;
use worldline_log::log::bundle;

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
