//! `fork --samples K`: the group of branches from one event, as a line per
//! branch then the group's pass@k and pass^k, or as the `fork --samples
//! --json` document (the parent, the group, each member).

use super::run::RunSummary;
use serde_json::{Value, json};
use std::io::{self, Write};
use worldline_engine::fuzz::stats::{pass_at_ks, pass_hat_ks};
use worldline_engine::fuzz::summary::PassK;
use worldline_engine::grade::verdict::{self, Ending};
use worldline_engine::run::RunOutcome;

/// The branches `fork --samples` made from event `at` of `parent`.
pub struct Branches<'a> {
    /// The parent run's id.
    pub parent: &'a str,
    /// The event branched from.
    pub at: u64,
    /// Branches asked for (`--samples`).
    pub samples: u64,
    /// How many times the prefix was followed: 1 (the fork server,
    /// decision 0358) or one per branch.
    pub replayed: u64,
    /// Each branch made, with the model seed it drew from, in order.
    pub members: Vec<(u64, &'a RunOutcome)>,
    pub elapsed_ms: f64,
}

impl Branches<'_> {
    /// Whether every branch made passed (or completed, ungraded).
    pub fn all_passed(&self) -> bool {
        let g = Group::of(self);
        g.passes == g.size
    }
}

/// A group of branches: how many passed, pass@k and pass^k for each k.
struct Group<'a> {
    /// Branches made.
    size: u64,
    passes: u64,
    pass_at: Vec<PassK>,
    pass_hat: Vec<PassK>,
    /// The group's id: its first member's run.
    id: Option<&'a str>,
}

impl<'a> Group<'a> {
    fn of(b: &Branches<'a>) -> Group<'a> {
        let passed =
            |o: &RunOutcome| verdict::ending(o.footer.status, o.grade.as_ref()) == Ending::Passed;
        let c = b.members.iter().filter(|m| passed(m.1)).count() as u64;
        let n = b.members.len() as u64;
        Group {
            size: n,
            passes: c,
            pass_at: PassK::curve(n, |ks| pass_at_ks(c, n, ks)),
            pass_hat: PassK::curve(n, |ks| pass_hat_ks(&[c], n, ks)),
            id: b.members.first().and_then(|(_, o)| o.run_id.as_deref()),
        }
    }
}

/// `fork --samples K --json`: the parent, the group and each member.
pub fn json(b: &Branches<'_>) -> Value {
    let g = Group::of(b);
    let members: Vec<_> = b
        .members
        .iter()
        .enumerate()
        .map(|(i, (seed, o))| {
            json!({
                "member": i,
                "model_seed": seed,
                "reward": o.footer.reward(),
                "verdict": o.footer.verdict(),
                "run": RunSummary::of(o),
            })
        })
        .collect();
    json!({
        "parent": {"run": b.parent, "event": b.at},
        "prefix": {"events": b.at, "replayed": b.replayed},
        "group": {"id": g.id, "size": b.samples, "passes": g.passes, "pass_at_k": g.pass_at, "pass_hat_k": g.pass_hat},
        "members": members,
        "elapsed_ms": b.elapsed_ms,
    })
}

/// `fork --samples K`: a line per branch, then the group's rates.
pub fn write(out: &mut impl Write, b: &Branches<'_>) -> io::Result<()> {
    let g = Group::of(b);
    writeln!(
        out,
        "{} branches of {} at event {} (group {})",
        b.samples,
        b.parent,
        b.at,
        g.id.unwrap_or("-")
    )?;
    for (i, (_, o)) in b.members.iter().enumerate() {
        writeln!(
            out,
            "  {i}  {}  {}",
            o.run_id.as_deref().unwrap_or("-"),
            verdict::shown_status(o.footer.status, o.grade.as_ref())
        )?;
    }
    let last = |v: &[PassK]| v.last().map_or(0.0, |p| p.value * 100.0);
    let (c, n) = (g.passes, g.size);
    writeln!(
        out,
        "{c}/{n} passed, pass@1 {:.1}%, pass@{n} {:.1}%, pass^{n} {:.1}% ({:.0} ms)",
        g.pass_at.first().map_or(0.0, |p| p.value * 100.0),
        last(&g.pass_at),
        last(&g.pass_hat),
        b.elapsed_ms
    )
}
