//! Loading what a suite runs before its first case: the agent, and the
//! service of each world its cases use. What the compile cache does not
//! hold is compiled here, shown as progress on a terminal, so that no
//! case's time includes a compile; the compiles are reported once.

use anyhow::Result;
use indicatif::ProgressBar;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use worldline_case::error::InputError;
use worldline_engine::suite::{Compile, Entry};
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

/// The sandbox, the agent (none for a native one), and what had to be
/// compiled.
pub struct Loaded {
    pub sandbox: Sandbox,
    pub agent: Option<Arc<Agent>>,
    pub compiles: Vec<Compile>,
}

/// The sandbox and the agent loaded, the services not yet: what can be
/// loaded before the cases are read (their worlds name the services).
pub struct Started {
    /// The agent it loaded, as named.
    pub agent_path: Option<PathBuf>,
    loaded: Loaded,
    compiled: Compiled,
}

/// The components the sandbox compiled, in order, and their sizes.
type Compiled = Arc<Mutex<Vec<(PathBuf, usize)>>>;

/// Load, for a suite that runs `jobs` runs at once, the agent at `agent`
/// (when it is a component), then ([`Started::services`]) the services of
/// the cases' worlds.
pub fn start(
    store: &StoreDir,
    agent: Option<&Path>,
    bar: &ProgressBar,
    jobs: usize,
) -> Result<Started> {
    let compiled: Compiled = Arc::default();
    let seen = compiled.clone();
    let shown = bar.clone();
    // A suite runs many short runs, `jobs` at once: their instances come
    // from a pool (decision 0390).
    let sandbox = Sandbox::pooled(Some(store.compile_cache_dir()), jobs)?.on_compile(Box::new(
        move |origin, bytes| {
            shown.set_message(super::compiling(origin, bytes));
            seen.lock()
                .expect("compile list lock")
                .push((origin.to_path_buf(), bytes));
            None
        },
    ));
    let mut started = Started {
        agent_path: agent.map(Path::to_path_buf),
        loaded: Loaded {
            sandbox,
            agent: None,
            compiles: Vec::new(),
        },
        compiled,
    };
    if let Some(agent) = agent {
        let loaded = &mut started.loaded;
        let (sandbox, compiles) = (&loaded.sandbox, &mut loaded.compiles);
        let what = agent.display().to_string();
        loaded.agent = Some(timed(&started.compiled, compiles, &what, || {
            worldline_engine::agent_file::load(sandbox, store, agent)
        })?);
    }
    Ok(started)
}

impl Started {
    /// The services of `entries`' worlds, loaded, and by world those that
    /// are refused (not a component, not a service): the cases of such a
    /// world are the suite's collection errors, as a missing service's
    /// are. Any other error is the runs' to report.
    pub fn services(mut self, entries: &[Entry]) -> (Loaded, BTreeMap<String, InputError>) {
        let services: BTreeMap<String, _> = entries
            .iter()
            .filter_map(|e| Some((e.case.world.reference(), e.case.world.service.clone()?)))
            .collect();
        let loaded = &mut self.loaded;
        let mut refused = BTreeMap::new();
        for (world, source) in &services {
            let what = format!("{} (service of {world})", source.file.display());
            let load = timed(&self.compiled, &mut loaded.compiles, &what, || {
                loaded.sandbox.service(source).map(|_| ())
            });
            if let Some(e) = load
                .as_ref()
                .err()
                .and_then(|e| e.downcast_ref::<InputError>())
            {
                refused.insert(world.clone(), e.clone());
            }
        }
        (self.loaded, refused)
    }
}

/// `load()`, with what it compiled (if anything) added to `compiles`.
fn timed<T>(
    compiled: &Compiled,
    compiles: &mut Vec<Compile>,
    what: &str,
    load: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let before = compiled.lock().expect("compile list lock").len();
    let t = Instant::now();
    let result = load();
    let list = compiled.lock().expect("compile list lock");
    if let Some((_, bytes)) = list.get(before) {
        compiles.push(Compile {
            bytes: *bytes as u64,
            component: what.to_string(),
            ms: t.elapsed().as_secs_f64() * 1000.0,
        });
    }
    result
}
