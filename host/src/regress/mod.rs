//! From an incident to a regression case: `case from-run` (a recorded run
//! made a case) and the check that a case's `[origin]` still holds (its
//! bundle copy is there, verifies and is the run it names, and the world
//! it finds is the one the run met).

pub mod from_run;

use crate::case::Case;
use crate::log::bundle;

/// Why the case's `[origin]` no longer backs it, one line each (empty when
/// it does, or when the case has no origin).
pub fn origin_warnings(case: &Case) -> Vec<String> {
    let Some(o) = &case.origin else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let dir = case.path.parent().unwrap_or(std::path::Path::new("."));
    let copy = dir.join(&o.bundle);
    if !copy.is_file() {
        out.push(format!(
            "[origin] bundle {} is gone: the recorded model answers and the link to run {} are lost",
            copy.display(),
            o.run
        ));
    } else {
        match bundle::read(&copy) {
            Err(e) => out.push(format!(
                "[origin] bundle {} no longer verifies: {e}",
                copy.display()
            )),
            Ok(b) => {
                let chain = b.footer.map(|f| f.chain_hash).unwrap_or_default();
                if chain != o.chain_hash {
                    out.push(format!(
                        "[origin] bundle {} is not run {} any more: its chain hash is {chain}, the case names {}",
                        copy.display(),
                        o.run,
                        o.chain_hash
                    ));
                }
            }
        }
    }
    if case.world.hash != o.world_hash {
        out.push(format!(
            "world {} has changed since run {} (content hash {}, the run met {})",
            case.world.reference(),
            o.run,
            case.world.hash,
            o.world_hash
        ));
    }
    out
}
