//! A suite: the `test --json` document and the text report (a line per
//! case with its run id, then `N passed, N failed`); with `--repeat k`,
//! pass@k and pass^k per case and for the suite.

mod streamed;

pub use streamed::Streamed;

use super::check::Problem;
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use worldline_case::shown;
use worldline_engine::fuzz::stats::{Z95, pass_at_k, pass_at_ks, pass_hat_k, pass_hat_ks, wilson};
use worldline_engine::fuzz::summary::PassK;
use worldline_engine::suite::{CaseRun, Compile, SuiteRun};
pub use worldline_log::log::usage::ModelTotals;

/// One case of the `test --json` document. Run-level fields describe the
/// run that speaks for the case (the first that did not pass, else the
/// first); `run_ids` lists every run.
#[derive(Serialize, Deserialize)]
pub struct CaseSummary {
    /// The agent's own error (its `err` reason, exception, panic) in the
    /// run that speaks for the case.
    #[serde(default)]
    pub agent_error: Option<worldline_engine::traceback::AgentError>,
    pub bundle: Option<String>,
    pub case: String,
    pub chain_hash: Option<String>,
    pub elapsed_ms: f64,
    pub events: Option<u64>,
    pub failures: Option<Vec<worldline_engine::grade::Assertion>>,
    pub fuel: Option<u64>,
    /// With `--group`: the group its runs are, member by member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupSummary>,
    /// Position in the whole suite (before filters and partitions).
    pub index: usize,
    /// With `--repeat`: the pass rate's 95% Wilson interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// With `--repeat`: pass@k of this case at the k
    /// `stats::reported_ks` lists (every k up to 16, powers of two, runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_at_k: Vec<PassK>,
    /// With `--repeat`: pass^k of this case, at the same k.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_hat_k: Vec<PassK>,
    pub passed: bool,
    /// Runs that passed (of `runs`).
    pub passes: u64,
    pub path: String,
    pub reason: Option<String>,
    pub run_id: Option<String>,
    pub run_ids: Vec<String>,
    pub run_status: Option<String>,
    pub runs: u64,
    pub skipped: bool,
    pub status: String,
}

/// A case's runs as a group (`test --group K`): its id (the first
/// member's run id) and each member's seed and reward.
#[derive(Serialize, Deserialize, Clone)]
pub struct GroupSummary {
    pub id: Option<String>,
    pub members: Vec<Member>,
    pub size: u64,
}

/// One member of a group.
#[derive(Serialize, Deserialize, Clone)]
pub struct Member {
    pub member: u64,
    pub model_seed: Option<u64>,
    pub reward: Option<f64>,
    pub run_id: Option<String>,
    pub verdict: Option<String>,
}

impl GroupSummary {
    /// The group a case's runs recorded, if they are one.
    fn of(c: &CaseRun) -> Option<Self> {
        let runs: Vec<_> = c
            .attempts
            .iter()
            .filter_map(|a| a.outcome.as_ref().ok())
            .collect();
        let size = runs.iter().find_map(|o| o.header.group.as_ref())?.size;
        let id = runs
            .iter()
            .find(|o| o.header.group.as_ref().is_some_and(|g| g.id.is_none()))
            .and_then(|o| o.run_id.clone());
        let members = runs
            .iter()
            .filter_map(|o| {
                let g = o.header.group.as_ref()?;
                Some(Member {
                    member: g.member,
                    model_seed: o.header.model_seed,
                    reward: o.footer.reward(),
                    run_id: o.run_id.clone(),
                    verdict: o.footer.verdict().map(str::to_string),
                })
            })
            .collect();
        Some(GroupSummary { id, members, size })
    }

    /// Whether its members' rewards differ (a group whose members all
    /// score the same gives a group-relative trainer no signal).
    fn mixed(&self) -> bool {
        let first = self.members.first().and_then(|m| m.reward);
        self.members.iter().any(|m| m.reward != first)
    }
}

/// A shard's report (`test --partition`): which shard, and the whole
/// selection it is a share of, for `worldline merge`.
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct Shard {
    pub partition: String,
    /// Cases selected in the whole suite (every shard's together).
    pub selected: usize,
    /// SHA-256 of the whole selection (each case's index and name, a line
    /// each): the same in every shard of one suite.
    pub selection: String,
    /// SHA-256 of the selection's indices alone (a line each): what
    /// `merge` checks the merged cases against, since a redacted copy of
    /// a report (a viewer's, on a database store) may hide case names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indices: Option<String>,
    /// SHA-256 of the agent every run of the shard ran, when they all ran
    /// one (absent when cases name their own agents, and in reports
    /// written before it): `merge` refuses shards of different agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// SHA-256 of what the runs were given beside the agent: every
    /// selected case file's hash and the model flags (absent in reports
    /// written before it): `merge` refuses shards that differ in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
}

impl Shard {
    /// The shard `partition` of the selected cases, given as (index, name).
    pub fn of<'a>(partition: String, selected: impl Iterator<Item = (usize, &'a str)>) -> Shard {
        let (mut text, mut indices) = (String::new(), String::new());
        let mut n = 0;
        for (index, name) in selected {
            text.push_str(&format!("{index}\t{name}\n"));
            indices.push_str(&format!("{index}\n"));
            n += 1;
        }
        Shard {
            partition,
            selected: n,
            selection: worldline_case::canon::sha256_hex(text),
            indices: Some(worldline_case::canon::sha256_hex(indices)),
            agent: None,
            inputs: None,
        }
    }
}

/// The `test --json` document.
#[derive(Serialize, Deserialize)]
pub struct SuiteSummary {
    pub cases: Vec<CaseSummary>,
    /// Case files that could not be loaded; the suite exits 2 when there
    /// are any.
    #[serde(default)]
    pub collection_errors: Vec<Problem>,
    /// Components compiled before the first case (absent when the compile
    /// cache held them all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compiles: Vec<Compile>,
    pub elapsed_ms: f64,
    pub failed: usize,
    /// The signal that stopped the suite starting cases (`SIGINT`,
    /// `SIGTERM`); the cases it had not started are skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// Cases the signal cut short, each run they made passing (status
    /// `interrupted`): counted neither passed nor failed (they were
    /// counted failed); absent when none.
    #[serde(default, skip_serializing_if = "none")]
    pub interrupted_cases: usize,
    /// Model calls of every run of the suite (absent when there were none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelTotals>,
    /// The judge's calls (`[[expect.judge]]`) of every run, apart from the
    /// agent's (absent when there were none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<ModelTotals>,
    /// With `--repeat`: pass^k over the cases, k = 1..repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_k: Vec<PassK>,
    /// With `--repeat`: pass@k over the cases (their mean), k = 1..repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_at_k: Vec<PassK>,
    pub passed: usize,
    pub repeat: u64,
    /// With `--partition`: which shard of which selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    pub skipped: usize,
    pub total: usize,
}

impl CaseSummary {
    pub(crate) fn of(c: &CaseRun) -> Self {
        let shown = c.shown();
        let o = shown.and_then(|a| a.outcome.as_ref().ok());
        let runs = c.attempts.len() as u64;
        let interval = (runs > 1).then(|| {
            let (lo, hi) = wilson(c.passes(), runs, Z95);
            [lo, hi]
        });
        CaseSummary {
            agent_error: o.and_then(|o| worldline_engine::traceback::agent_error(&o.footer)),
            bundle: o.and_then(|o| o.bundle.as_ref().map(|b| b.display().to_string())),
            case: c.name.clone(),
            chain_hash: o.map(|o| o.footer.chain_hash.clone()),
            elapsed_ms: c.elapsed().as_secs_f64() * 1000.0,
            events: o.map(|o| o.footer.events),
            failures: o
                .and_then(|o| o.grade.as_ref())
                .map(|g| g.failures().cloned().collect()),
            fuel: o.map(|o| o.footer.fuel),
            group: GroupSummary::of(c),
            index: c.index,
            interval,
            pass_at_k: per_k(runs, |ks| pass_at_ks(c.passes(), runs, ks)),
            pass_hat_k: per_k(runs, |ks| pass_hat_ks(&[c.passes()], runs, ks)),
            passed: c.passed(),
            passes: c.passes(),
            path: c.path.display().to_string(),
            reason: c.reason(),
            run_id: shown.and_then(|a| a.run_id()).map(str::to_string),
            run_ids: c
                .attempts
                .iter()
                .filter_map(|a| a.run_id())
                .map(str::to_string)
                .collect(),
            run_status: o.map(|o| o.footer.status.as_str().to_string()),
            runs,
            skipped: c.skipped(),
            status: c.status().to_string(),
        }
    }
}

/// A curve over `runs` runs at the k `stats::reported_ks` lists, when there
/// was more than one run.
fn per_k(runs: u64, values: impl FnOnce(&[u64]) -> Vec<f64>) -> Vec<PassK> {
    if runs <= 1 {
        return Vec::new();
    }
    PassK::curve(runs, values)
}

/// pass^k over the cases' pass counts (each of `repeat` runs).
fn pass_k(per_case: &[u64], repeat: u64) -> Vec<PassK> {
    if per_case.is_empty() {
        return Vec::new();
    }
    per_k(repeat, |ks| pass_hat_ks(per_case, repeat, ks))
}

/// pass@k: the mean over the cases of each one's pass@k.
fn pass_at_k_of_suite(per_case: &[u64], repeat: u64) -> Vec<PassK> {
    if per_case.is_empty() {
        return Vec::new();
    }
    per_k(repeat, |ks| {
        let mut sum = vec![0.0; ks.len()];
        for &c in per_case {
            for (s, v) in sum.iter_mut().zip(pass_at_ks(c, repeat, ks)) {
                *s += v;
            }
        }
        sum.into_iter().map(|s| s / per_case.len() as f64).collect()
    })
}

impl SuiteSummary {
    pub fn of(s: &SuiteRun) -> Self {
        // Cases that made every run: one a signal stopped part way counts
        // its runs that never happened as failures otherwise.
        let per_case: Vec<u64> = (s.cases.iter())
            .filter(|c| c.attempts.len() as u64 == s.repeat)
            .map(|c| c.passes())
            .collect();
        let (mut model, mut judge) = (ModelTotals::default(), ModelTotals::default());
        for a in s.cases.iter().flat_map(|c| &c.attempts) {
            model.add(&a.model);
            judge.add(&a.judge);
        }
        SuiteSummary {
            cases: s.cases.iter().map(CaseSummary::of).collect(),
            collection_errors: s.collection_errors.iter().map(Problem::of).collect(),
            compiles: s.compiles.clone(),
            elapsed_ms: s.elapsed.as_secs_f64() * 1000.0,
            failed: s.failed(),
            interrupted: s.interrupted.map(str::to_string),
            interrupted_cases: s.interrupted_cases(),
            model: (model.calls > 0).then_some(model),
            judge: (judge.calls > 0).then_some(judge),
            pass_k: pass_k(&per_case, s.repeat),
            pass_at_k: pass_at_k_of_suite(&per_case, s.repeat),
            passed: s.passed(),
            repeat: s.repeat,
            shard: None,
            skipped: s.skipped(),
            total: s.cases.len(),
        }
    }

    /// Shard reports of one suite (`test --partition i/n --json`) as the
    /// report one machine would have printed: cases in suite order, counts
    /// and pass^k recomputed; `elapsed_ms` is the slowest shard's, and each
    /// compiled component is listed once, at its slowest shard's time.
    pub fn merge(shards: Vec<SuiteSummary>) -> Result<SuiteSummary, String> {
        let selected = check_shards(&shards)?;
        let repeat = shards.first().map_or(1, |s| s.repeat);
        if let Some(s) = shards.iter().find(|s| s.repeat != repeat) {
            return Err(format!(
                "the shards ran cases a different number of times ({repeat} and {}); merge shards of one `test --repeat` setting",
                s.repeat
            ));
        }
        let elapsed_ms = shards.iter().map(|s| s.elapsed_ms).fold(0.0, f64::max);
        let interrupted = shards.iter().find_map(|s| s.interrupted.clone());
        let (mut model, mut judge) = (ModelTotals::default(), ModelTotals::default());
        for m in shards.iter().filter_map(|s| s.model.as_ref()) {
            model.add(m);
        }
        for j in shards.iter().filter_map(|s| s.judge.as_ref()) {
            judge.add(j);
        }
        // Every machine collects the whole suite, so each shard reports the
        // same errors: each once (they were counted once a shard).
        let mut collection_errors: Vec<Problem> = Vec::new();
        for e in shards.iter().flat_map(|s| &s.collection_errors) {
            if !collection_errors.contains(e) {
                collection_errors.push(e.clone());
            }
        }
        // One machine compiles each component once: each is listed once,
        // at its longest compile on any shard (the shards compiled side by
        // side; the agent was listed once a shard and the times summed).
        let mut compiles: Vec<Compile> = Vec::new();
        for c in shards.iter().flat_map(|s| &s.compiles) {
            match compiles.iter_mut().find(|k| k.component == c.component) {
                Some(kept) if c.ms > kept.ms => *kept = c.clone(),
                Some(_) => {}
                None => compiles.push(c.clone()),
            }
        }
        let mut cases: Vec<CaseSummary> = shards.into_iter().flat_map(|s| s.cases).collect();
        cases.sort_by_key(|c| c.index);
        if let Some(w) = cases.windows(2).find(|w| w[0].index == w[1].index) {
            return Err(format!(
                "case {} (index {}) is in two shards; merge the shards of one partitioned suite, each once",
                shown::text(&w[0].case),
                w[0].index
            ));
        }
        if let Some((selected, selection, indices)) = &selected {
            if cases.len() != *selected {
                return Err(format!(
                    "the shards hold {} of the suite's {selected} cases; merge whole shards (without --limit)",
                    cases.len()
                ));
            }
            // Every case's index (and, in a report that says no more, its
            // name) against the hash of the selection each shard was cut
            // from: an index moved (a gap) is a case that is not the
            // suite's. Names are not compared where the shards hash their
            // indices alone: a redacted copy may hide them.
            let held = Shard::of(
                String::new(),
                cases.iter().map(|c| (c.index, c.case.as_str())),
            );
            let same = match indices {
                Some(indices) => held.indices.as_ref() == Some(indices),
                None => held.selection == *selection,
            };
            if !same {
                return Err(
                    "the shards' cases are not the selection they were cut from (a case's index or name differs from what the shards' `selection` hash says): a shard is missing, edited, or of another suite; merge the reports of every shard as `test --partition` wrote them"
                        .into(),
                );
            }
        }
        let per_case: Vec<u64> = (cases.iter())
            .filter(|c| !c.skipped && c.runs == repeat)
            .map(|c| c.passes)
            .collect();
        let passed = cases.iter().filter(|c| c.passed).count();
        let skipped = cases.iter().filter(|c| c.skipped).count();
        let interrupted_cases = cut_short(&cases);
        Ok(SuiteSummary {
            collection_errors,
            compiles,
            elapsed_ms,
            interrupted,
            interrupted_cases,
            model: (model.calls > 0).then_some(model),
            judge: (judge.calls > 0).then_some(judge),
            failed: cases.len() - passed - skipped - interrupted_cases,
            pass_k: pass_k(&per_case, repeat),
            pass_at_k: pass_at_k_of_suite(&per_case, repeat),
            passed,
            repeat,
            shard: None,
            skipped,
            total: cases.len(),
            cases,
        })
    }
}

/// Check reports (read from files, so maybe edited) before merging: one
/// whole-suite report, or every shard of one selection once, each adding
/// up. Returns the selection's case count and hash when they are shards.
fn check_shards(shards: &[SuiteSummary]) -> Result<Option<Selection>, String> {
    let [one] = shards else {
        return check_partitioned(shards).map(Some);
    };
    match &one.shard {
        Some(_) => check_partitioned(shards).map(Some),
        None => check_tallies(one, "the report", None).map(|()| None),
    }
}

/// The selection shards were cut from: its case count, its hash, and the
/// hash of its indices alone (reports from before it have none).
type Selection = (usize, String, Option<String>);

fn check_partitioned(shards: &[SuiteSummary]) -> Result<Selection, String> {
    let infos = shards
        .iter()
        .map(|s| {
            s.shard.as_ref().ok_or(
                "a report has no `shard`: merge the --json reports of `test --partition i/n`",
            )
        })
        .collect::<Result<Vec<&Shard>, _>>()?;
    let texts: Vec<&str> = infos.iter().map(|i| i.partition.as_str()).collect();
    let parts = worldline_case::partition::Partition::whole_set(&texts)?;
    let first = infos[0];
    for (s, (info, p)) in shards.iter().zip(infos.iter().zip(&parts)) {
        if (info.selected, &info.selection, &info.indices)
            != (first.selected, &first.selection, &first.indices)
        {
            return Err(format!(
                "shard {p} is of another suite ({} cases selected, selection {}) than shard {} ({} cases, selection {}); merge the shards of one suite",
                info.selected,
                &info.selection[..info.selection.len().min(12)],
                parts[0],
                first.selected,
                &first.selection[..first.selection.len().min(12)]
            ));
        }
        check_tallies(s, &format!("shard {p}"), Some(p))?;
    }
    let short = |a: &str| a[..a.len().min(12)].to_string();
    if let Some((p, agent, q, other)) = differing(&infos, &parts, |i| i.agent.as_deref()) {
        return Err(format!(
            "shard {p} ran agent {} and shard {q} agent {}: merge the shards of one agent build",
            short(agent),
            short(other)
        ));
    }
    if let Some((p, inputs, q, other)) = differing(&infos, &parts, |i| i.inputs.as_deref()) {
        return Err(format!(
            "shard {p} ran other case files, worlds or model flags (inputs {}) than shard {q} (inputs {}): merge the shards of one suite run from the same case files and worlds with the same `--model-set`, `--user-model-set` and `--model-seed`",
            short(inputs),
            short(other)
        ));
    }
    Ok((
        first.selected,
        first.selection.clone(),
        first.indices.clone(),
    ))
}

/// Two shards that say different things of `what` (shards that say
/// nothing of it are not compared): each's partition and value.
fn differing<'a>(
    infos: &[&'a Shard],
    parts: &'a [worldline_case::partition::Partition],
    what: impl Fn(&'a Shard) -> Option<&'a str>,
) -> Option<(
    &'a worldline_case::partition::Partition,
    &'a str,
    &'a worldline_case::partition::Partition,
    &'a str,
)> {
    let mut said = (infos.iter().zip(parts)).filter_map(|(i, p)| Some((what(i)?, p)));
    let (first, p) = said.next()?;
    let (other, q) = said.find(|(v, _)| *v != first)?;
    Some((p, first, q, other))
}

/// A report's counts against its cases, and each case's against itself.
fn check_tallies(
    s: &SuiteSummary,
    what: &str,
    p: Option<&worldline_case::partition::Partition>,
) -> Result<(), String> {
    if s.repeat > worldline_case::bounded::RUNS {
        return Err(format!(
            "{what}: `repeat` is {}, more runs of a case than one command makes ({}); merge the reports `test --partition` wrote",
            s.repeat,
            worldline_case::bounded::RUNS
        ));
    }
    for c in &s.cases {
        let wrong = if c.passes > c.runs || c.runs > s.repeat {
            Some(format!(
                "{} passes of {} runs with --repeat {}",
                c.passes, c.runs, s.repeat
            ))
        } else if c.skipped != (c.runs == 0 && c.status != "interrupted") {
            Some(format!("skipped is {} with {} runs", c.skipped, c.runs))
        } else if c.passed && (c.skipped || c.passes != c.runs)
            || !c.passed && !c.skipped && c.passes == c.runs && c.status != "interrupted"
        {
            Some(format!(
                "passed is {} with {} of {} runs passing",
                c.passed, c.passes, c.runs
            ))
        } else if c.run_ids.len() as u64 > c.runs {
            Some(format!("{} run ids for {} runs", c.run_ids.len(), c.runs))
        } else if let Some(p @ worldline_case::partition::Partition::Hash { .. }) = p
            && !p.contains(c.index, &c.case)
        {
            Some(format!("it is not in shard {p}"))
        } else {
            None
        };
        if let Some(wrong) = wrong {
            return Err(format!(
                "{what}: case {} (index {}) does not add up: {wrong}",
                shown::text(&c.case),
                c.index
            ));
        }
    }
    let passed = s.cases.iter().filter(|c| c.passed).count();
    let skipped = s.cases.iter().filter(|c| c.skipped).count();
    let cut = cut_short(&s.cases);
    let counts = [
        ("total", s.total, s.cases.len()),
        ("passed", s.passed, passed),
        ("skipped", s.skipped, skipped),
        ("interrupted_cases", s.interrupted_cases, cut),
        ("failed", s.failed, s.cases.len() - passed - skipped - cut),
    ];
    if let Some((key, said, is)) = counts.into_iter().find(|(_, a, b)| a != b) {
        return Err(format!(
            "{what}: `{key}` is {said}, but its cases count {is}"
        ));
    }
    Ok(())
}

/// Whether a count is 0 (left out of the document).
fn none(n: &usize) -> bool {
    *n == 0
}

/// How many of `cases` a signal cut short (status `interrupted`).
fn cut_short(cases: &[CaseSummary]) -> usize {
    cases.iter().filter(|c| c.status == "interrupted").count()
}

/// The line of one case: mark, name, events, time, run id (or how many
/// runs passed), and why it did not pass; a case not run, what stopped
/// the suite (`interrupted`: the signal, or the store's error).
fn line(c: &CaseRun, width: usize, interrupted: Option<&str>) -> String {
    // A case's name is its file's: shown escaped (a newline in it broke
    // the line a case, and the terminal took its control characters).
    let name = shown::text(&c.name);
    let Some(shown) = c.shown() else {
        // Its only run stopped by the signal (a native one), not counted.
        if let Some(reason) = c.reason() {
            return format!("STOP  {name:width$}  {} — {reason}", c.status());
        }
        let why = interrupted.unwrap_or("--fail-fast");
        return format!("SKIP  {name:width$}  ({why}: not run)");
    };
    let own = shown
        .outcome
        .as_ref()
        .ok()
        .and_then(|o| worldline_engine::traceback::agent_error(&o.footer));
    let reason = c.reason();
    case_line(&Line {
        mark: mark(c.passed(), c.status()),
        name: &name,
        width,
        events: shown.outcome.as_ref().map_or(0, |o| o.footer.events),
        ms: c.elapsed().as_secs_f64() * 1000.0,
        runs: c.attempts.len() as u64,
        passes: c.passes(),
        run_id: shown.run_id().unwrap_or("-"),
        status: c.status(),
        reason: reason.as_deref(),
        own: own.as_ref(),
    })
}

/// `PASS`, `FAIL`, or `STOP` for a case whose runs a signal cut short.
fn mark(passed: bool, status: &str) -> &'static str {
    match (passed, status) {
        (true, _) => "PASS",
        (false, "interrupted") => "STOP",
        (false, _) => "FAIL",
    }
}

/// A case's line as a suite's report and a merged one both write it.
struct Line<'a> {
    mark: &'a str,
    name: &'a str,
    width: usize,
    events: u64,
    ms: f64,
    /// How many times it ran, and passed.
    runs: u64,
    passes: u64,
    /// The run shown (the failing one when it ran more than once).
    run_id: &'a str,
    status: &'a str,
    /// Why it did not pass.
    reason: Option<&'a str>,
    /// The agent's own error, written under the line unless the reason
    /// said it.
    own: Option<&'a worldline_engine::traceback::AgentError>,
}

/// `MARK  NAME  EVENTS events  MS ms  RUN_ID` (or, run more than once,
/// `c/K passed, pass@K, pass^K`), why it did not pass, and the agent's own
/// error under it.
fn case_line(l: &Line) -> String {
    let (runs, width) = (l.runs.max(1), l.width);
    let which = if runs > 1 {
        format!(
            "{}/{runs} passed, pass@{runs} {:.1}%, pass^{runs} {:.1}%",
            l.passes,
            pass_at_k(l.passes, runs, runs) * 100.0,
            pass_hat_k(&[l.passes], runs, runs) * 100.0
        )
    } else {
        l.run_id.to_string()
    };
    let line = format!(
        "{}  {:width$}  {:>6} events  {:>7.1} ms  {which}",
        l.mark, l.name, l.events, l.ms
    );
    let line = match l.reason.map(super::field) {
        Some(r) if runs > 1 => format!("{line}  {} — {r} (run {})", l.status, l.run_id),
        Some(r) => format!("{line}  {} — {r}", l.status),
        None => line,
    };
    let own = (l.own).filter(|e| l.reason != Some(e.message.as_str()) || e.at.is_some());
    match own {
        Some(e) => {
            let lines: Vec<String> = e.lines().iter().map(|l| format!("      {l}")).collect();
            format!("{line}\n{}", lines.join("\n"))
        }
        None => line,
    }
}

/// The widest of the case `names` as a report shows them (escaped), which
/// its lines pad the names to.
fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names
        .map(|n| shown::text(n).chars().count())
        .max()
        .unwrap_or(0)
}

/// A line per case, then the totals.
pub fn write(out: &mut impl Write, err: &mut impl Write, s: &SuiteRun) -> io::Result<()> {
    write_from(out, err, s, 0)
}

/// The lines of the cases from the `from`th on (those before it were
/// written as the suite ran, [`Streamed`]), then the totals.
fn write_from(
    out: &mut impl Write,
    err: &mut impl Write,
    s: &SuiteRun,
    from: usize,
) -> io::Result<()> {
    let width = name_width(s.cases.iter().map(|c| c.name.as_str()));
    // What stopped the suite starting cases, which its skipped cases say.
    let stopper = (s.interrupted).or(s.stopped.as_ref().map(|_| "the store's error"));
    for c in s.cases.iter().skip(from) {
        writeln!(out, "{}", line(c, width, stopper))?;
    }
    write_totals(out, err, &SuiteSummary::of(s))?;
    Ok(())
}

/// A merged report (`worldline merge`): a line per case as one machine's
/// report gives it (its events, time, and with `--repeat` or `--group`
/// its `c/K passed, pass@K, pass^K`; the line dropped them), then the
/// totals.
pub fn write_merged(
    out: &mut impl Write,
    err: &mut impl Write,
    s: &SuiteSummary,
) -> io::Result<()> {
    // Every string of a report is the report file's: shown escaped.
    let names: Vec<String> = s.cases.iter().map(|c| shown::text(&c.case)).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    for (c, name) in s.cases.iter().zip(&names) {
        let run_id = shown::text(c.run_id.as_deref().unwrap_or("-"));
        let reason = c.reason.as_deref().map(shown::message);
        if c.skipped {
            let stopped = s.interrupted.as_deref().unwrap_or("--fail-fast");
            let why = reason.unwrap_or_else(|| format!("({stopped}: not run)"));
            writeln!(out, "SKIP  {name:width$}  {run_id}  {why}")?;
            continue;
        }
        // The agent's error escaped too.
        let own = c.agent_error.clone().map(|mut e| {
            e.status = shown::text(&e.status);
            e.message = shown::message(&e.message);
            e.at = e.at.map(|a| shown::message(&a));
            e
        });
        let line = case_line(&Line {
            mark: mark(c.passed, &c.status),
            name,
            width,
            events: c.events.unwrap_or(0),
            ms: c.elapsed_ms,
            runs: c.runs,
            passes: c.passes,
            run_id: &run_id,
            status: &shown::text(&c.status),
            reason: reason.as_deref(),
            own: own.as_ref(),
        });
        writeln!(out, "{line}")?;
    }
    write_totals(out, err, s)?;
    Ok(())
}

/// The collection errors, what was compiled before the first case (on
/// stderr), pass^k and pass@k with `--repeat`, the model totals when there
/// were model calls, and
/// `N passed, N failed[, N interrupted][, N skipped][, N error(s) collecting cases]`.
fn write_totals(out: &mut impl Write, err: &mut impl Write, s: &SuiteSummary) -> io::Result<()> {
    for e in &s.collection_errors {
        writeln!(out, "ERROR collecting {}", shown::message(&e.text()))?;
    }
    if !s.compiles.is_empty() {
        let each: Vec<String> = s
            .compiles
            .iter()
            .map(|c| format!("{} {:.1} s", shown::text(&c.component), c.ms / 1000.0))
            .collect();
        let total: f64 = s.compiles.iter().map(|c| c.ms).sum();
        // Metadata of this machine, beside the report (as the progress is).
        writeln!(
            err,
            "compiled before the first case in {:.1} s, not in the case times: {}",
            total / 1000.0,
            each.join(", ")
        )?;
    }
    for (mark, figures) in [("^", &s.pass_k), ("@", &s.pass_at_k)] {
        if figures.is_empty() {
            continue;
        }
        let ks: Vec<String> = figures
            .iter()
            .map(|p| format!("pass{mark}{} {:.1}%", p.k, p.value * 100.0))
            .collect();
        writeln!(out, "{} runs of each case: {}", s.repeat, ks.join(", "))?;
    }
    let groups: Vec<&GroupSummary> = s.cases.iter().filter_map(|c| c.group.as_ref()).collect();
    if !groups.is_empty() {
        let mixed = groups.iter().filter(|g| g.mixed()).count();
        writeln!(
            out,
            "groups: {} of {} rollouts each (own model seeds), {mixed} with mixed rewards, {} all alike; run ids in --json, `export --format trajectories` writes them grouped",
            groups.len(),
            s.repeat,
            groups.len() - mixed
        )?;
    }
    for (who, totals) in [("model", &s.model), ("judge", &s.judge)] {
        let Some(m) = totals else { continue };
        writeln!(
            out,
            "{who}: {} calls, {} tokens ({} prompt, {} completion), {:.1} s waiting on live endpoints",
            m.calls,
            m.total_tokens,
            m.prompt_tokens,
            m.completion_tokens,
            m.real_latency_ms as f64 / 1000.0
        )?;
    }
    let skipped = match (s.interrupted_cases, s.skipped) {
        (0, 0) => String::new(),
        (0, n) => format!(", {n} skipped"),
        (i, 0) => format!(", {i} interrupted"),
        (i, n) => format!(", {i} interrupted, {n} skipped"),
    };
    let errors = match s.collection_errors.len() {
        0 => String::new(),
        n => format!(", {n} error(s) collecting cases"),
    };
    writeln!(
        out,
        "{} passed, {} failed{skipped}{errors}",
        s.passed, s.failed
    )?;
    if let Some(signal) = &s.interrupted {
        writeln!(
            out,
            "interrupted by {}: the cases it had not started are skipped (`--rerun-failed` runs them with the failures)",
            shown::text(signal)
        )?;
    }
    Ok(())
}
