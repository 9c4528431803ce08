//! Re-grading a recorded run without re-running the agent: its final state
//! is rebuilt from the world's initial state and the recorded writes.

use super::gold::GoldState;
use super::judge::Judging;
use super::{Evidence, Grade, final_state, grade_judged};
use worldline_case::case::expect::Expect;
use worldline_case::world::World;
use worldline_log::log::{Footer, HeldBundle, rules};

/// `bundle` (whose `footer` is given) graded against `expect` on `world`,
/// with warnings when the world changed since the run or the rebuilt state
/// is not the recorded one. `gold` is the case's gold state when it has
/// gold calls.
pub(crate) fn regrade(
    expect: &Expect,
    world: &World,
    bundle: &HeldBundle,
    footer: &Footer,
    gold: Option<&GoldState>,
    judging: &Judging,
) -> (Grade, Vec<String>) {
    let mut warnings = Vec::new();
    let recorded = &bundle.header.world;
    if world.reference() != *recorded {
        warnings.push(format!(
            "the run was recorded against world {recorded}, the case names {}: the run's writes are applied to {}",
            world.reference(),
            world.reference()
        ));
    } else if world.hash != bundle.header.world_hash {
        // The world's own files, or only the overlays the case lays on it
        // (the warning blamed the world for an overlay the case added).
        let what = match world.manifest_hash() == bundle.header.world_hash {
            true => format!(
                "the case's [[overlay]] changed the world {} since the run",
                world.reference()
            ),
            false => format!(
                "the world {} as the case gives it (its files, or the case's [[overlay]]) changed since the run",
                world.reference()
            ),
        };
        warnings.push(format!(
            "{what}; the run's writes are applied to it as it is now"
        ));
    }
    let final_state = final_state(&world.initial, bundle.events.as_held());
    if final_state.hash() != footer.final_state_hash && warnings.is_empty() {
        warnings
            .push("the rebuilt final state does not match the recorded final-state hash".into());
    }
    let g = grade_judged(
        expect,
        &Evidence {
            status: footer.status,
            output: footer.output.as_deref(),
            events: bundle.events.as_held(),
            initial: &world.initial,
            final_state: &final_state,
            gold,
            // Graded as it ran; a header a later worldline wrote is
            // graded under the rules known here.
            rules: rules::of_header(bundle.header.rules).unwrap_or(rules::CURRENT),
        },
        judging,
    );
    (g, warnings)
}
