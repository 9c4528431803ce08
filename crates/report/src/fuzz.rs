//! A fuzz campaign: the `fuzz --json` document and the text report (the
//! pass rate with its interval, pass^k, and each failure group with its
//! fault mix, shrink result in words and reproducer).

use std::io::{self, Write};
use worldline_case::case::fuzz::{Profile, Schedule};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use worldline_case::partition::Partition;
use worldline_case::shown;
use worldline_engine::fuzz::describe;
use worldline_engine::fuzz::reproducer::Kept;
use worldline_engine::fuzz::summary::{Group, MixEntry, Summary, Tally};

/// Where the campaign's faults came from, and the profile itself.
#[derive(Clone, Serialize, Deserialize)]
pub struct Faults {
    pub from: String,
    pub profile: Profile,
}

/// A group's reproducer run.
#[derive(Clone, Serialize, Deserialize)]
pub struct Reproducer {
    pub bundle: Option<String>,
    pub chain_hash: String,
    pub faults: Schedule,
    pub model_seed: Option<u64>,
    pub run_id: Option<String>,
    pub seed: u64,
}

/// What shrinking a group's reproducer found.
#[derive(Clone, Serialize, Deserialize)]
pub struct ShrinkReport {
    pub complete: bool,
    pub faults_after: usize,
    pub faults_before: usize,
    pub tries: u64,
    pub words: String,
}

/// Failures that share a signature.
#[derive(Clone, Serialize, Deserialize)]
pub struct GroupReport {
    pub count: u64,
    pub fault_mix: Vec<MixEntry>,
    pub rate: f64,
    pub reproducer: Reproducer,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk: Option<ShrinkReport>,
    pub signature: String,
    /// An `unscripted` group: what the scripted model had no reply for
    /// (its reproducer's error, with the agent's message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscripted: Option<String>,
    /// A group of the agent's own faults (`trapped`, `exited`, ...): its
    /// reproducer's error in one line (the exception, the reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_error: Option<String>,
    /// A native agent's reproducer that ended otherwise when written: how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproducer_ended: Option<String>,
    /// Its reproducer was not kept: the store had failed (a database
    /// store's server gone); `reproducer` names its seed alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unstored: bool,
}

/// Real time the campaign took (the one part that differs between two
/// runs of the same campaign).
#[derive(Clone, Serialize, Deserialize)]
pub struct Timing {
    pub elapsed_ms: f64,
    pub runs_per_s: f64,
}

/// The `fuzz --json` document: written by `fuzz`, and read back typed by
/// the text report and by `merge` (a shard that does not read as one is
/// refused naming the field).
#[derive(Clone, Serialize, Deserialize)]
pub struct FuzzReport {
    pub agent_sha256: String,
    pub case: String,
    pub faults: Faults,
    pub groups: Vec<GroupReport>,
    pub repeat: u64,
    pub seed: u64,
    pub seeds: u64,
    pub summary: Summary,
    pub timing: Timing,
    pub world: String,
    /// A shard's report (`--partition`): which shard, and its tally (counts,
    /// not every run), for `worldline merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// A shard's case file and model flags, hashed (`merge` refuses
    /// shards that differ in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tally: Option<Tally>,
    /// The signal that stopped the campaign before its runs were all made
    /// (`SIGINT`, `SIGTERM`): the report counts those made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// The store failed during the campaign (a database store's server
    /// gone): as a signal does, it stopped the runs (the report counts
    /// those made), and no reproducer was kept after it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub store_failed: bool,
}

impl GroupReport {
    pub fn of(k: &Kept) -> Self {
        GroupReport {
            count: k.group.count,
            fault_mix: k.group.fault_mix.clone(),
            rate: k.group.rate,
            reproducer: Reproducer {
                bundle: k.outcome.bundle.as_ref().map(|b| b.display().to_string()),
                chain_hash: k.outcome.footer.chain_hash.clone(),
                faults: k.faults().clone(),
                model_seed: k.trial.model_seed,
                run_id: k.outcome.run_id.clone(),
                seed: k.trial.seed,
            },
            shrunk: k.shrunk.as_ref().map(|(s, before)| ShrinkReport {
                complete: s.complete,
                faults_after: s.schedule.len(),
                faults_before: *before,
                tries: s.tries,
                words: describe::schedule(s),
            }),
            signature: k.group.signature.clone(),
            unscripted: (k.outcome.footer.status == worldline_log::log::Status::Unscripted)
                .then(|| k.outcome.footer.error.clone())
                .flatten(),
            agent_error: worldline_engine::traceback::agent_error(&k.outcome.footer)
                .map(|e| e.message),
            reproducer_ended: k.ended_otherwise.clone(),
            unstored: false,
        }
    }

    /// A group whose reproducer was not kept, the store having failed:
    /// its counts, and its first run's seeds and faults.
    pub fn unkept(g: &Group) -> Self {
        GroupReport {
            count: g.count,
            fault_mix: g.fault_mix.clone(),
            rate: g.rate,
            reproducer: Reproducer {
                bundle: None,
                chain_hash: String::new(),
                faults: g.first.faults.clone(),
                model_seed: g.first.model_seed,
                run_id: None,
                seed: g.first.seed,
            },
            shrunk: None,
            signature: g.signature.clone(),
            unscripted: None,
            agent_error: None,
            reproducer_ended: None,
            unstored: true,
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The text report, from the `--json` document (one machine's, or the
/// shards' merged: `merge` prints what one machine would have).
pub fn write(out: &mut impl Write, r: &FuzzReport) -> io::Result<()> {
    let s = &r.summary;
    writeln!(
        out,
        "fuzz {} on {}: {} runs, campaign seed {}, faults from {}",
        shown::text(&r.case),
        shown::text(&r.world),
        s.runs,
        r.seed,
        shown::text(&r.faults.from)
    )?;
    let planned = r.seeds.saturating_mul(r.repeat.max(1));
    if let Some(signal) = &r.interrupted {
        writeln!(
            out,
            "  interrupted by {signal}: {} of its {planned} runs made, and counted here",
            s.runs,
        )?;
    }
    // A shard's runs are fewer than the campaign's whatever happened.
    if r.store_failed && r.interrupted.is_none() && r.partition.is_none() && s.runs < planned {
        writeln!(
            out,
            "  stopped by the store's error: {} of its {planned} runs made, and counted here",
            s.runs,
        )?;
    }
    let share = |count: u64, total: u64, rate: f64, interval: [f64; 2]| {
        format!(
            "{count}/{total} = {} (95% interval {} – {})",
            pct(rate),
            pct(interval[0]),
            pct(interval[1])
        )
    };
    writeln!(
        out,
        "  passed {}",
        share(s.passed, s.runs, s.pass_rate, s.interval)
    )?;
    if let Some(a) = &s.attack {
        writeln!(
            out,
            "  attack succeeded in {} of the runs an injection reached",
            share(a.succeeded, a.injected, a.rate, a.interval)
        )?;
    }
    let ks: Vec<String> = (s.pass_k.iter())
        .map(|p| format!("pass^{} {}", p.k, pct(p.value)))
        .collect();
    if !ks.is_empty() {
        writeln!(out, "  {}", ks.join(", "))?;
    }
    // A signal may leave failures whose reproducer was not run (a native
    // agent's run does not begin after it): counted, not grouped.
    let grouped: u64 = r.groups.iter().map(|g| g.count).sum();
    if s.failed > grouped {
        writeln!(
            out,
            "  {} failed run{} not grouped: the campaign was interrupted before their reproducers ran",
            s.failed - grouped,
            if s.failed - grouped == 1 { "" } else { "s" }
        )?;
    } else if r.groups.is_empty() {
        writeln!(out, "  no failures")?;
    }
    for g in &r.groups {
        writeln!(
            out,
            "  {} run{} ({}) {}",
            g.count,
            if g.count == 1 { "" } else { "s" },
            pct(g.rate),
            shown::text(&g.signature)
        )?;
        if let Some(why) = &g.unscripted {
            writeln!(out, "      {}", shown::text(why))?;
        }
        if let Some(error) = &g.agent_error {
            writeln!(out, "      the agent's error: {}", shown::message(error))?;
        }
        if let Some(ended) = &g.reproducer_ended {
            writeln!(
                out,
                "      its reproducer ended `{}` when written: the native agent's requests arrived in another order (docs/native.md); `worldline repro` runs it again",
                shown::text(ended)
            )?;
        }
        let mix: Vec<String> = (g.fault_mix.iter())
            .map(|m| format!("{} ×{}", shown::text(&m.fault), m.runs))
            .collect();
        if !mix.is_empty() {
            writeln!(out, "      fault mix: {}", mix.join(", "))?;
        }
        if let Some(sh) = &g.shrunk {
            writeln!(
                out,
                "      shrunk from {} to {} fault(s) in {} runs{}: {}",
                sh.faults_before,
                sh.faults_after,
                sh.tries,
                if sh.complete { "" } else { " (budget spent)" },
                // Whole: its end says whether each fault is needed, or
                // that the budget ran out (it was cut at 200 characters).
                shown::message(&sh.words)
            )?;
        }
        if let Some(id) = &g.reproducer.run_id {
            writeln!(
                out,
                "      reproducer: {id} (seed {}); worldline replay {id}",
                g.reproducer.seed
            )?;
        } else if g.unstored {
            writeln!(
                out,
                "      reproducer not kept (seed {}): the store had failed",
                g.reproducer.seed
            )?;
        }
    }
    writeln!(
        out,
        "  {:.0} ms, {} runs/s",
        r.timing.elapsed_ms,
        rate(r.timing.runs_per_s)
    )?;
    Ok(())
}

/// A rate for people: whole numbers from 10 up, one decimal from 1, two
/// below (`0.39`, never `0`).
pub fn rate(per_s: f64) -> String {
    match per_s {
        r if r >= 10.0 => format!("{r:.0}"),
        r if r >= 1.0 => format!("{r:.1}"),
        r => format!("{r:.2}"),
    }
}

/// What shards of one campaign hold alike, by name, as JSON.
fn identity(r: &FuzzReport) -> [(&'static str, Value); 8] {
    [
        ("agent_sha256", json!(r.agent_sha256)),
        ("case", json!(r.case)),
        // The profile, not the path it was read from (`./f.toml`, a pod's mount).
        ("faults", json!(r.faults.profile)),
        ("inputs", json!(r.inputs)),
        ("repeat", json!(r.repeat)),
        ("seed", json!(r.seed)),
        ("seeds", json!(r.seeds)),
        ("world", json!(r.world)),
    ]
}

/// What `other` holds otherwise than `first`, of what shards of one
/// campaign hold alike: `inputs` said only two hashes, naming neither what
/// goes into them nor which report had which.
pub fn unlike(first: &FuzzReport, other: &FuzzReport) -> Option<String> {
    let ((key, one), (_, two)) = identity(first)
        .into_iter()
        .zip(identity(other))
        .find(|((_, a), (_, b))| a != b)?;
    let what = match key {
        "inputs" => " (the hash of the case file, the model flags and --shrink it ran with)",
        _ => "",
    };
    Some(format!(
        "`{key}`{what} is {} in one and {} in the other",
        shown::text(&one.to_string()),
        shown::text(&two.to_string())
    ))
}

/// Shard reports of one campaign (`fuzz --partition i/n --json`) as the
/// report one machine would have printed for the same campaign seed: the
/// tallies of every shard added up, the summary and groups computed again,
/// each group's reproducer taken from the shard that ran its first run.
/// Only `timing` and the reproducers' run ids and bundle paths differ.
pub fn merge(shards: &[FuzzReport]) -> Result<FuzzReport, String> {
    let first = shards.first().ok_or("no reports to merge")?;
    if let Some(m) = shards.iter().find_map(|s| unlike(first, s)) {
        return Err(format!("the reports are not shards of one campaign: {m}"));
    }
    let repeat = first.repeat.max(1);
    let seeds = first.seeds;
    let expected = seeds.checked_mul(repeat).ok_or_else(|| {
        format!(
            "the reports say {seeds} seeds repeated {repeat} times: more runs than can be counted"
        )
    })?;
    if let Some((s, signal)) = shards
        .iter()
        .find_map(|s| Some((s, s.interrupted.as_ref()?)))
    {
        return Err(format!(
            "shard {} was interrupted by {signal} after {} runs: run it again, then merge",
            s.partition.as_deref().unwrap_or("(whole)"),
            s.summary.runs
        ));
    }
    let mut parts = Vec::new();
    for s in shards {
        let (Some(_), Some(p)) = (&s.tally, &s.partition) else {
            return Err(
                "a report has no `tally`: merge the --json reports of `fuzz --partition i/n`"
                    .into(),
            );
        };
        parts.push(p.as_str());
    }
    let parts = Partition::whole_set(&parts)?;
    let mut tallies = Vec::new();
    for (s, p) in shards.iter().zip(parts) {
        let t = s.tally.clone().expect("checked above");
        if t.repeat != repeat {
            return Err(format!(
                "shard {p}: its tally repeats seeds {} times, the report {repeat}",
                t.repeat
            ));
        }
        t.check_shard(seeds, seeds_of(&p, seeds)?, |seed| {
            p.contains(seed as usize, &seed.to_string())
        })
        .map_err(|why| format!("shard {p}: its tally does not add up: {why}"))?;
        tallies.push(t);
    }
    // Checked first: `repeat` sizes the tally's table.
    let mut tally = Tally::new(repeat);
    for t in tallies {
        tally.merge(t)?;
    }
    if tally.runs != expected {
        return Err(format!(
            "the reports hold {} of the campaign's {expected} runs; merge every shard",
            tally.runs
        ));
    }
    let summary = tally.summary();
    let mut groups = Vec::new();
    for g in tally.groups() {
        let t = &g.first;
        let kept = (shards.iter().flat_map(|s| &s.groups))
            .find(|k| {
                k.signature == g.signature
                    && k.reproducer.seed == t.seed
                    && k.reproducer.model_seed == t.model_seed
            })
            .ok_or_else(|| {
                format!(
                    "no shard kept the reproducer of `{}` (seed {}); the reports are not of one campaign",
                    shown::text(&g.signature),
                    t.seed
                )
            })?;
        // What the shard kept of its reproducer beside the tally's counts
        // (its shrunk form, what a scripted model had no reply for).
        groups.push(GroupReport {
            count: g.count,
            fault_mix: g.fault_mix,
            rate: g.rate,
            reproducer: kept.reproducer.clone(),
            shrunk: kept.shrunk.clone(),
            signature: g.signature,
            unscripted: kept.unscripted.clone(),
            agent_error: kept.agent_error.clone(),
            reproducer_ended: kept.reproducer_ended.clone(),
            unstored: kept.unstored,
        });
    }
    let elapsed_ms = (shards.iter())
        .map(|s| s.timing.elapsed_ms)
        .fold(0.0, f64::max);
    Ok(FuzzReport {
        summary,
        groups,
        timing: Timing {
            elapsed_ms,
            runs_per_s: tally.runs as f64 / (elapsed_ms / 1000.0).max(1e-9),
        },
        partition: None,
        inputs: None,
        tally: None,
        store_failed: shards.iter().any(|s| s.store_failed),
        ..first.clone()
    })
}

/// Most seeds a `hash:` shard's seeds are counted for (one by one).
const MAX_HASHED_SEEDS: u64 = 10_000_000;

/// How many of a campaign's `seeds` shard `p` runs.
fn seeds_of(p: &Partition, seeds: u64) -> Result<u64, String> {
    let (shard, total) = p.shard_of();
    match p {
        Partition::Count { .. } => Ok(seeds / total + u64::from(shard - 1 < seeds % total)),
        Partition::Hash { .. } if seeds > MAX_HASHED_SEEDS => Err(format!(
            "the reports say {seeds} seeds; merge checks `hash:` shards of at most {MAX_HASHED_SEEDS}"
        )),
        Partition::Hash { .. } => Ok((0..seeds)
            .filter(|s| p.contains(*s as usize, &s.to_string()))
            .count() as u64),
    }
}

#[cfg(test)]
mod rate_tests {
    #[test]
    fn slow_rates_are_not_rounded_to_zero() {
        assert_eq!(super::rate(0.39), "0.39");
        assert_eq!(super::rate(2.44), "2.4");
        assert_eq!(super::rate(2429.3), "2429");
    }
}
