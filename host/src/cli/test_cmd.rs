//! `worldline test CASES... --agent A.wasm`: run a suite in parallel, one
//! line per case and a summary; exit 1 when any case fails; JUnit XML for CI.

use super::{Common, ModelArgs, report};
use crate::case::{self, Case};
use crate::error::{ExitCode, InputError};
use crate::run::{RunOptions, RunOutcome, run_with};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct TestArgs {
    /// Case files, or folders searched for `*.toml` cases.
    #[arg(required = true)]
    pub cases: Vec<PathBuf>,
    /// The agent component (.wasm).
    #[arg(long)]
    pub agent: PathBuf,
    /// Folder holding the worlds (default: the nearest `worlds/` above each case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Cases run at once (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub common: Common,
}

/// Folders a search for cases passes over: hidden ones (a `.worldline`
/// store, `.git`), `worlds/` (world.toml files are not cases) and any
/// store (a folder with `runs/` and `objects/`, whose `worlds/` holds
/// recorded worlds).
fn not_cases(dir: &Path) -> bool {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    name.is_some_and(|n| n.starts_with('.') || n == "worlds")
        || (dir.join("runs").is_dir() && dir.join("objects").is_dir())
}

/// Case files named by the arguments, folders expanded, in sorted order.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            if p.is_dir() {
                if !not_cases(&p) {
                    walk(&p, out)?;
                }
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found)
                .map_err(|e| InputError::new(p, format!("cannot read folder: {e}")))?;
            if found.is_empty() {
                return Err(InputError::new(p, "no .toml case files in this folder"));
            }
            found.sort();
            out.extend(found);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(InputError::new(p, "no such case file or folder"));
        }
    }
    Ok(out)
}

/// `incident/stale-deploy` for `.../cases/incident/stale-deploy.toml`.
pub fn display_name(path: &Path) -> String {
    let stem = path.with_extension("");
    let parts: Vec<String> = stem
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    match parts.iter().rposition(|p| p == "cases") {
        Some(i) if i + 1 < parts.len() => parts[i + 1..].join("/"),
        _ => parts.last().cloned().unwrap_or_default(),
    }
}

struct Done {
    name: String,
    path: PathBuf,
    outcome: RunOutcome,
    elapsed: Duration,
}

impl Done {
    fn passed(&self) -> bool {
        report::exit_code(self.outcome.footer.status, self.outcome.grade.as_ref()) == ExitCode::Ok
    }

    fn status(&self) -> &str {
        report::shown_status(self.outcome.footer.status, self.outcome.grade.as_ref())
    }

    fn reason(&self) -> Option<String> {
        let o = &self.outcome;
        if self.passed() {
            None
        } else if o.footer.status.is_fault() {
            // A fault says more than the grade it spoiled (a Python
            // exception, a panic, fuel).
            o.footer.error.clone()
        } else {
            o.grade
                .as_ref()
                .and_then(report::first_failure)
                .or_else(|| o.footer.error.clone())
        }
    }
}

pub fn exec(args: TestArgs) -> Result<ExitCode> {
    let files = expand(&args.cases)?;
    let mut cases: Vec<Case> = files
        .iter()
        .map(|f| case::load(f, args.worlds.as_deref()))
        .collect::<Result<_, _>>()?;
    for c in &mut cases {
        args.model.apply(c)?;
    }
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?;
    let agent = crate::agent_file::load(&sandbox, &store, &args.agent)?;
    for c in &cases {
        store.put_case(c)?;
    }

    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let next = AtomicUsize::new(0);
    // A run that could not be carried out (the store cannot be written: a
    // full disk, a read-only folder) stops the suite: it is an error of
    // the machine, not a failure of the agent.
    let broken: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let results: Mutex<Vec<Option<Done>>> = Mutex::new((0..cases.len()).map(|_| None).collect());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(cases.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    if broken.lock().expect("error lock").is_some() {
                        break;
                    }
                    let t0 = Instant::now();
                    let options = RunOptions {
                        store: Some(&store),
                        model_seed: args.model.model_seed,
                        ..RunOptions::default()
                    };
                    let outcome = match run_with(&sandbox, &agent, case, options) {
                        Ok(o) => o,
                        Err(e) => {
                            let name = display_name(&files[i]);
                            broken
                                .lock()
                                .expect("error lock")
                                .get_or_insert(e.context(format!("running case {name}")));
                            break;
                        }
                    };
                    let done = Done {
                        name: display_name(&files[i]),
                        path: files[i].clone(),
                        outcome,
                        elapsed: t0.elapsed(),
                    };
                    results.lock().expect("results lock")[i] = Some(done);
                }
            });
        }
    });
    if let Some(e) = broken.into_inner().expect("error lock") {
        return Err(e);
    }
    let total = started.elapsed();
    let done: Vec<Done> = results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .flatten()
        .collect();
    let passed = done.iter().filter(|d| d.passed()).count();
    let failed = done.len() - passed;

    if let Some(path) = &args.junit {
        std::fs::write(path, junit(&done, total))
            .map_err(|e| InputError::new(path, format!("cannot write JUnit report: {e}")))?;
    }
    if args.common.json {
        let cases: Vec<serde_json::Value> = done
            .iter()
            .map(|d| {
                let o = &d.outcome;
                json!({
                    "case": d.name,
                    "path": d.path.display().to_string(),
                    "passed": d.passed(),
                    "status": d.status(),
                    "run_status": o.footer.status.as_str(),
                    "run_id": o.run_id,
                    "bundle": o.bundle.as_ref().map(|b| b.display().to_string()),
                    "events": o.footer.events,
                    "fuel": o.footer.fuel,
                    "chain_hash": o.footer.chain_hash,
                    "reason": d.reason(),
                    "failures": o.grade.as_ref().map(|g| g.failures().cloned().collect::<Vec<_>>()),
                    "elapsed_ms": d.elapsed.as_secs_f64() * 1000.0,
                })
            })
            .collect();
        let doc = json!({"passed": passed, "failed": failed, "total": done.len(), "elapsed_ms": total.as_secs_f64() * 1000.0, "cases": cases});
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let width = done.iter().map(|d| d.name.len()).max().unwrap_or(0);
        for d in &done {
            let mark = if d.passed() { "PASS" } else { "FAIL" };
            let events = d.outcome.footer.events;
            let line = format!(
                "{mark}  {:width$}  {:>6} events  {:>7.1} ms",
                d.name,
                events,
                d.elapsed.as_secs_f64() * 1000.0
            );
            match d.reason() {
                Some(r) => println!("{line}  {} — {r}", d.status()),
                None => println!("{line}"),
            }
        }
        println!("{passed} passed, {failed} failed");
    }
    Ok(if failed == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}

fn xml_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// JUnit XML: one testsuite, one testcase per case.
fn junit(done: &[Done], total: Duration) -> String {
    let failed = done.iter().filter(|d| !d.passed()).count();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites tests=\"{}\" failures=\"{failed}\" time=\"{:.3}\">\n  <testsuite name=\"worldline\" tests=\"{}\" failures=\"{failed}\" time=\"{:.3}\">\n",
        done.len(),
        total.as_secs_f64(),
        done.len(),
        total.as_secs_f64()
    ));
    for d in done {
        let class = d.outcome.header.world.clone();
        x.push_str(&format!(
            "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
            xml_escape(&d.name),
            xml_escape(&class),
            d.elapsed.as_secs_f64()
        ));
        let bundle = d.outcome.bundle.as_ref().map(|b| b.display().to_string());
        if d.passed() && bundle.is_none() {
            x.push_str("/>\n");
            continue;
        }
        x.push_str(">\n");
        if !d.passed() {
            let mut body = String::new();
            let o = &d.outcome;
            if let Some(g) = &o.grade {
                for a in g.failures() {
                    body.push_str(&format!(
                        "{}: expected {}, got {}\n",
                        a.what, a.expected, a.actual
                    ));
                }
                for l in g.diff.lines() {
                    body.push_str(&format!("{l}\n"));
                }
            }
            if let Some(e) = &o.footer.error {
                body.push_str(&format!("{e}\n"));
            }
            x.push_str(&format!(
                "      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                xml_escape(&d.reason().unwrap_or_default()),
                xml_escape(d.status()),
                xml_escape(&body)
            ));
        }
        if let Some(b) = bundle {
            x.push_str(&format!(
                "      <system-out>bundle: {}</system-out>\n",
                xml_escape(&b)
            ));
        }
        x.push_str("    </testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_relative_to_the_cases_folder() {
        assert_eq!(
            display_name(Path::new("/x/cases/incident/stale.toml")),
            "incident/stale"
        );
        assert_eq!(display_name(Path::new("elsewhere/one.toml")), "one");
    }

    #[test]
    fn xml_is_escaped() {
        assert_eq!(xml_escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
