//! Re-grade a recorded run against the same or a newer case, without
//! re-running the agent: the final state is rebuilt from the world's
//! initial state and the writes in the bundle. A re-judged grade
//! (`rejudge`) is kept in the store beside the recorded one (a database
//! store's in its database, so any machine's later re-grade reads it);
//! a re-grade reads the judge's answers of all of them.

use crate::grade::Grade;
use crate::grade::judge::Judging;
use crate::grade::regrade::regrade;
use anyhow::Result;
use std::path::{Path, PathBuf};
use worldline_case::case::{self, Case};
use worldline_case::error::InputError;
use worldline_log::log::bundle::{self, Footer};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// What to grade against.
pub struct GradeArgs {
    /// The run's bundle (resolved by the caller).
    pub bundle: PathBuf,
    /// The case to grade against (default: the file under `cases` whose
    /// content is the recorded case's).
    pub case: Option<PathBuf>,
    /// Where to look for it: the project file's `cases`, else `./cases`.
    pub cases: Vec<PathBuf>,
    /// Folder holding the worlds (default: the nearest `worlds/` above the case).
    pub worlds: Option<PathBuf>,
    /// Ask the judge model again instead of using its recorded answers.
    pub rejudge: bool,
}

/// A run graded.
pub struct Graded {
    pub case: PathBuf,
    pub grade: Grade,
    pub warnings: Vec<String>,
    /// The recorded run's footer (its status, its recorded grade).
    pub footer: Footer,
}

/// The case file under `dir` whose bytes hash to `hash`.
fn find_case(paths: &[PathBuf], hash: &str) -> Option<PathBuf> {
    let files = worldline_case::case::discover::expand(paths).ok()?;
    files.into_iter().find(|f| {
        worldline_case::bounded::read(f, worldline_case::bounded::DOCUMENT)
            .is_ok_and(|b| worldline_case::canon::sha256_hex(b) == hash)
    })
}

/// Keep a re-judged grade as the next record (the recorded one stays in
/// the bundle; earlier re-judged ones stay too). A warning when it could
/// not be kept: a database store keeps re-grades of its own runs only.
fn keep_regrade(store: &StoreDir, run_id: &str, g: &Grade) -> Result<Option<String>> {
    Ok(
        match store.put_regrade(run_id, &serde_json::to_value(g)?)? {
            Some(_) => None,
            None => Some(format!(
                "the new grade is not kept: run {run_id} is not in the store's database (`worldline import` brings it in)"
            )),
        },
    )
}

/// Grade the run as `args` say; `sandbox` is made only when the case has
/// gold calls to run.
pub fn grade(
    store: &StoreDir,
    args: &GradeArgs,
    sandbox: impl FnOnce() -> Result<Sandbox>,
) -> Result<Graded> {
    let path = &args.bundle;
    // Held (decision 0380): grading reads no model request.
    let b = bundle::read_held(path).map_err(InputError::from)?;
    // Its writes are redacted: the state rebuilt from them is not the
    // run's (a passed run graded failed, a redacted key a new row).
    if let Some(r) = &b.header.redacted {
        return Err(InputError::new(
            path,
            format!(
                "is a redacted copy of run {}: its writes are redacted, so the world's state cannot be rebuilt to grade it (its recorded verdict is in `worldline runs`; grade the run itself in the store that holds it)",
                r.original_run
            ),
        )
        .into());
    }
    let case_path = match &args.case {
        Some(c) => c.clone(),
        None => find_case(&args.cases, &b.header.case_hash).ok_or_else(|| {
            let looked: Vec<String> = args.cases.iter().map(|p| p.display().to_string()).collect();
            InputError::new(
                path,
                format!(
                    "no case file under {} holds the recorded case (it changed since the run, or lives elsewhere); pass --case FILE",
                    looked.join(", ")
                ),
            )
        })?,
    };
    let case: Case = case::load(&case_path, args.worlds.as_deref())?;
    // A newer version of the run's world is graded against (with a
    // warning); another world is not the run's at all: its writes would
    // be applied to tables they never touched.
    let name = |reference: &str| reference.split('@').next().unwrap_or_default().to_string();
    let (ran, named) = (name(&b.header.world), name(&case.world.reference()));
    if ran != named {
        return Err(InputError::new(
            &case_path,
            format!(
                "names the world `{}`, and the run was recorded in `{}`: pass --case with a case of that world",
                case.world.reference(),
                b.header.world
            ),
        )
        .into());
    }
    let Some(expect) = &case.expect else {
        return Err(
            InputError::new(&case_path, "this case has no [expect] to grade against").into(),
        );
    };
    let Some(footer) = &b.footer else {
        return Err(InputError::new(
            path,
            "the run is incomplete (no footer); there is no outcome to grade",
        )
        .into());
    };
    let gold = if expect.gold.is_empty() {
        None
    } else {
        crate::grade::gold::for_case(&sandbox()?, &case)?
    };
    let run_id = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    // The judge's answers recorded for this run: every re-grade's, the
    // newest first, then the run's own (a re-judge against an edited
    // rubric must not hide the answers to the rubric as it was).
    let grades = store.regrades(&run_id)?;
    let recorded = serde_json::json!({
        "assertions": grades
            .iter()
            .chain(footer.grade.as_ref())
            .filter_map(|g| g["assertions"].as_array())
            .flatten()
            .collect::<Vec<_>>(),
    });
    let judge = expect.judge_model.as_ref();
    if let Some(var) = judge.filter(|_| args.rejudge).and_then(|m| m.missing_key()) {
        return Err(InputError::new(
            &case_path,
            format!(
                "[expect.judge_model] api_key_env names `{var}`, which is not set; export {var}=... before `grade --rejudge` (the key is never recorded)"
            ),
        )
        .into());
    }
    let judging = if args.rejudge {
        Judging::Live {
            case_dir: case_path.parent().unwrap_or(Path::new(".")),
            seed: b.header.seed,
            budget: std::time::Duration::from_millis(case.limits.timeout_ms),
        }
    } else {
        Judging::Recorded(&recorded)
    };
    let (grade, mut warnings) = regrade(expect, &case.world, &b, footer, gold.as_deref(), &judging);
    // Said even when the world is the same (a regrade against a case whose
    // seed, task or rules changed gave its verdict without a word), with
    // both names when the case is another file (`--case` of another case
    // read as the run's own, changed).
    if case.hash != b.header.case_hash {
        let named = match case.name == b.header.case {
            true => String::new(),
            false => format!(
                " (the run's case is `{}`, this one `{}`)",
                b.header.case, case.name
            ),
        };
        warnings.insert(
            0,
            format!("the case changed since the run{named}: graded against its [expect] as it is now (the run met the recorded case's task, seed and rules)"),
        );
    }
    // A re-judge the judge did not answer is not kept: it would stand for
    // the run's grade from now on (a provider's outage, a key not set,
    // kept as the judge's verdict).
    if args.rejudge {
        match crate::grade::judge::unanswered(&grade) {
            None => warnings.extend(keep_regrade(store, &run_id, &grade)?),
            Some((what, why)) => warnings.push(format!(
                "the new grade is not kept: the judge gave `{what}` no verdict ({why}); the run's grade stays what it was; run `grade --rejudge` again once the judge answers"
            )),
        }
    }
    Ok(Graded {
        case: case_path,
        grade,
        warnings,
        footer: footer.clone(),
    })
}
