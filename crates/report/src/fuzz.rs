//! A fuzz campaign: the `fuzz --json` document and the text report (the
//! pass rate with its interval, pass^k, and each failure group with its
//! fault mix, shrink result in words and reproducer).

use std::io::{self, Write};
use worldline_case::case::fuzz::{Profile, Schedule};

use serde::Serialize;
use serde_json::Value;
use worldline_case::partition::Partition;
use worldline_case::shown;
use worldline_engine::fuzz::describe;
use worldline_engine::fuzz::reproducer::Kept;
use worldline_engine::fuzz::summary::{MixEntry, Summary, Tally};

/// Where the campaign's faults came from, and the profile itself.
#[derive(Serialize)]
pub struct Faults<'a> {
    pub from: &'a str,
    pub profile: &'a Profile,
}

/// A group's reproducer run.
#[derive(Serialize)]
pub struct Reproducer<'a> {
    pub bundle: Option<String>,
    pub chain_hash: &'a str,
    pub faults: &'a Schedule,
    pub model_seed: Option<u64>,
    pub run_id: Option<&'a str>,
    pub seed: u64,
}

/// What shrinking a group's reproducer found.
#[derive(Serialize)]
pub struct ShrinkReport {
    pub complete: bool,
    pub faults_after: usize,
    pub faults_before: usize,
    pub tries: u64,
    pub words: String,
}

/// Failures that share a signature.
#[derive(Serialize)]
pub struct GroupReport<'a> {
    pub count: u64,
    pub fault_mix: &'a [MixEntry],
    pub rate: f64,
    pub reproducer: Reproducer<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shrunk: Option<ShrinkReport>,
    pub signature: &'a str,
    /// An `unscripted` group: what the scripted model had no reply for
    /// (its reproducer's error, with the agent's message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unscripted: Option<&'a str>,
}

/// Real time the campaign took (the one part that differs between two
/// runs of the same campaign).
#[derive(Serialize)]
pub struct Timing {
    pub elapsed_ms: f64,
    pub runs_per_s: f64,
}

/// The `fuzz --json` document.
#[derive(Serialize)]
pub struct FuzzReport<'a> {
    pub agent_sha256: &'a str,
    pub case: &'a str,
    pub faults: Faults<'a>,
    pub groups: Vec<GroupReport<'a>>,
    pub repeat: u64,
    pub seed: u64,
    pub seeds: u64,
    pub summary: &'a Summary,
    pub timing: Timing,
    pub world: String,
    /// A shard's report (`--partition`): which shard, and its tally (counts,
    /// not every run), for `worldline merge`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// A shard's case file and model flags, hashed (`merge` refuses
    /// shards that differ in it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tally: Option<&'a Tally>,
}

impl<'a> GroupReport<'a> {
    pub fn of(k: &'a Kept) -> Self {
        GroupReport {
            count: k.group.count,
            fault_mix: &k.group.fault_mix,
            rate: k.group.rate,
            reproducer: Reproducer {
                bundle: k.outcome.bundle.as_ref().map(|b| b.display().to_string()),
                chain_hash: &k.outcome.footer.chain_hash,
                faults: k.faults(),
                model_seed: k.trial.model_seed,
                run_id: k.outcome.run_id.as_deref(),
                seed: k.trial.seed,
            },
            shrunk: k.shrunk.as_ref().map(|(s, before)| ShrinkReport {
                complete: s.complete,
                faults_after: s.schedule.len(),
                faults_before: *before,
                tries: s.tries,
                words: describe::schedule(s),
            }),
            signature: &k.group.signature,
            unscripted: (k.outcome.footer.status == worldline_log::log::Status::Unscripted)
                .then_some(k.outcome.footer.error.as_deref())
                .flatten(),
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The text report, from the `--json` document (one machine's, or the
/// shards' merged: `merge` prints what one machine would have).
pub fn write(out: &mut impl Write, r: &Value) -> io::Result<()> {
    let s = &r["summary"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    writeln!(
        out,
        "fuzz {} on {}: {} runs, campaign seed {}, faults from {}",
        shown::text(r["case"].as_str().unwrap_or("")),
        shown::text(r["world"].as_str().unwrap_or("")),
        n(&s["runs"]),
        n(&r["seed"]),
        shown::text(r["faults"]["from"].as_str().unwrap_or(""))
    )?;
    let share = |of: &Value, count: &str, total: &str, rate: &str| {
        format!(
            "{}/{} = {} (95% interval {} – {})",
            n(&of[count]),
            n(&of[total]),
            pct(f(&of[rate])),
            pct(f(&of["interval"][0])),
            pct(f(&of["interval"][1]))
        )
    };
    writeln!(out, "  passed {}", share(s, "passed", "runs", "pass_rate"))?;
    if s["attack"].is_object() {
        writeln!(
            out,
            "  attack succeeded in {} of the runs an injection reached",
            share(&s["attack"], "succeeded", "injected", "rate")
        )?;
    }
    let ks: Vec<String> = (s["pass_k"].as_array().into_iter().flatten())
        .map(|p| format!("pass^{} {}", n(&p["k"]), pct(f(&p["value"]))))
        .collect();
    if !ks.is_empty() {
        writeln!(out, "  {}", ks.join(", "))?;
    }
    let groups = r["groups"].as_array().map_or(&[][..], Vec::as_slice);
    if groups.is_empty() {
        writeln!(out, "  no failures")?;
    }
    for g in groups {
        let count = n(&g["count"]);
        writeln!(
            out,
            "  {count} run{} ({}) {}",
            if count == 1 { "" } else { "s" },
            pct(f(&g["rate"])),
            shown::text(g["signature"].as_str().unwrap_or(""))
        )?;
        if let Some(why) = g["unscripted"].as_str() {
            writeln!(out, "      {}", shown::text(why))?;
        }
        let mix: Vec<String> = (g["fault_mix"].as_array().into_iter().flatten())
            .map(|m| {
                format!(
                    "{} ×{}",
                    shown::text(m["fault"].as_str().unwrap_or("")),
                    n(&m["runs"])
                )
            })
            .collect();
        if !mix.is_empty() {
            writeln!(out, "      fault mix: {}", mix.join(", "))?;
        }
        let sh = &g["shrunk"];
        if sh.is_object() {
            writeln!(
                out,
                "      shrunk from {} to {} fault(s) in {} runs{}: {}",
                n(&sh["faults_before"]),
                n(&sh["faults_after"]),
                n(&sh["tries"]),
                if sh["complete"] == true {
                    ""
                } else {
                    " (budget spent)"
                },
                shown::text(sh["words"].as_str().unwrap_or(""))
            )?;
        }
        if let Some(id) = g["reproducer"]["run_id"].as_str() {
            writeln!(
                out,
                "      reproducer: {id} (seed {}); worldline replay {id}",
                n(&g["reproducer"]["seed"])
            )?;
        }
    }
    if r["timing"].is_object() {
        writeln!(
            out,
            "  {:.0} ms, {} runs/s",
            f(&r["timing"]["elapsed_ms"]),
            rate(f(&r["timing"]["runs_per_s"]))
        )?;
    }
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

/// Shard reports of one campaign (`fuzz --partition i/n --json`) as the
/// report one machine would have printed for the same campaign seed: the
/// tallies of every shard added up, the summary and groups computed again,
/// each group's reproducer taken from the shard that ran its first run.
/// Only `timing` and the reproducers' run ids and bundle paths differ.
pub fn merge(shards: &[Value]) -> Result<Value, String> {
    let first = shards.first().ok_or("no reports to merge")?;
    for key in [
        "agent_sha256",
        "case",
        "faults",
        "inputs",
        "repeat",
        "seed",
        "seeds",
        "world",
    ] {
        if let Some(other) = shards.iter().find(|s| s[key] != first[key]) {
            return Err(format!(
                "the reports are not shards of one campaign: `{key}` is {} in one and {} in another",
                shown::text(&first[key].to_string()),
                shown::text(&other[key].to_string())
            ));
        }
    }
    let repeat = first["repeat"].as_u64().unwrap_or(1).max(1);
    let seeds = first["seeds"].as_u64().unwrap_or(0);
    let expected = seeds.checked_mul(repeat).ok_or_else(|| {
        format!(
            "the reports say {seeds} seeds repeated {repeat} times: more runs than can be counted"
        )
    })?;
    let mut parts = Vec::new();
    for s in shards {
        let (Some(_), Some(p)) = (s.get("tally"), s["partition"].as_str()) else {
            return Err(
                "a report has no `tally`: merge the --json reports of `fuzz --partition i/n`"
                    .into(),
            );
        };
        parts.push(p);
    }
    let parts = Partition::whole_set(&parts)?;
    let mut tallies = Vec::new();
    for (s, p) in shards.iter().zip(parts) {
        let t: Tally = serde_json::from_value(s["tally"].clone())
            .map_err(|e| format!("shard {p}: its `tally` does not read: {e}"))?;
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
        let kept = shards
            .iter()
            .flat_map(|s| s["groups"].as_array().into_iter().flatten())
            .find(|k| {
                k["signature"] == g.signature.as_str()
                    && k["reproducer"]["seed"] == t.seed
                    && k["reproducer"]["model_seed"] == serde_json::json!(t.model_seed)
            })
            .ok_or_else(|| {
                format!(
                    "no shard kept the reproducer of `{}` (seed {}); the reports are not of one campaign",
                    shown::text(&g.signature),
                    t.seed
                )
            })?;
        let mut group = serde_json::json!({
            "count": g.count,
            "fault_mix": g.fault_mix,
            "rate": g.rate,
            "reproducer": kept["reproducer"],
            "signature": g.signature,
        });
        // What the shard kept of its reproducer beside the tally's counts
        // (its shrunk form, what a scripted model had no reply for).
        for key in ["shrunk", "unscripted"] {
            if let Some(v) = kept.get(key) {
                group[key] = v.clone();
            }
        }
        groups.push(group);
    }
    let elapsed_ms = shards
        .iter()
        .filter_map(|s| s["timing"]["elapsed_ms"].as_f64())
        .fold(0.0, f64::max);
    let mut doc = first.clone();
    let obj = doc.as_object_mut().ok_or("a report is not a JSON object")?;
    for shard_only in ["inputs", "partition", "tally"] {
        obj.remove(shard_only);
    }
    obj.insert(
        "summary".into(),
        serde_json::to_value(&summary).expect("serializes"),
    );
    obj.insert("groups".into(), Value::Array(groups));
    obj.insert(
        "timing".into(),
        serde_json::to_value(Timing {
            elapsed_ms,
            runs_per_s: tally.runs as f64 / (elapsed_ms / 1000.0).max(1e-9),
        })
        .expect("serializes"),
    );
    Ok(doc)
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
