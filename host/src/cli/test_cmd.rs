//! `worldline test CASES... --agent A.wasm`: run a suite in parallel, one
//! line per case and a summary; exit 1 when any case fails; JUnit XML for CI.

use super::{Common, ModelArgs};
use crate::case::{self, discover};
use crate::error::{ExitCode, InputError};
use crate::report::{self, suite::SuiteSummary};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use crate::suite::Suite;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

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

pub fn exec(args: TestArgs) -> Result<ExitCode> {
    let files = discover::expand(&args.cases)?;
    let mut cases = Vec::with_capacity(files.len());
    for f in files {
        let mut c = case::load(&f, args.worlds.as_deref())?;
        args.model.apply(&mut c)?;
        cases.push((discover::display_name(&f), f, c));
    }
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?;
    let agent = crate::agent_file::load(&sandbox, &store, &args.agent)?;
    for (_, _, c) in &cases {
        store.put_case(c)?;
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let done = Suite {
        sandbox: &sandbox,
        agent: &agent,
        cases: &cases,
        store: &store,
        model_seed: args.model.model_seed,
        jobs,
    }
    .run();

    if let Some(path) = &args.junit {
        std::fs::write(path, report::junit::render(&done)?)
            .map_err(|e| InputError::new(path, format!("cannot write JUnit report: {e}")))?;
    }
    if args.common.json {
        report::print_json(&SuiteSummary::of(&done))?;
    } else {
        report::suite::print(&done);
    }
    Ok(if done.failed() == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
