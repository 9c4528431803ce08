//! The sandbox: a deterministic wasmtime engine, the linker that exposes
//! only the mediated interfaces, and agent loading (checks, compile cache,
//! pre-instantiation).
//!
//! Why the engine's settings are one table (was decision 0056): the engine is
//! configured from `ENGINE_SETTINGS` and the same names are hashed into the
//! engine hash, so the settings and the compile cache's key cannot disagree, as
//! settings in code and a hand-kept list for the hash could. A test holds the
//! wasmtime version string to Cargo.lock and the hash to its value before the
//! table existed.
//!
//! Why the first compile of a large agent is reported (was decision 0086): a
//! ComponentizeJS component is ~12 MB and compiling it takes seconds, which a
//! user of `worldline run` used to sit through in silence.
//! `Sandbox::on_compile` takes a notice, called when the cache does not hold
//! the agent and this process compiles it (not when it waited for another
//! compiling it and loaded that one's entry); `run`, `fork`, `rerun`, `replay`, `verify` and `repro` print one
//! line to stderr for components from 4 MB up, `test` and `fuzz` say so on
//! their progress line. A progress bar in the sandbox was ruled out: the
//! sandbox sits below the CLI and must not print.

mod cache;
mod functions;
pub(crate) mod imports;
mod pool;
mod service;

pub use service::unfit as unfit_service;

use crate::mediate::RunState;
use crate::mediate::bindings::{AgentHost, AgentHostPre, LinkOptions};
use anyhow::{Context as _, Result};
use cache::CompileCache;
use functions::FunctionCache;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};
use worldline_case::canon;
use worldline_case::error::InputError;

/// How often the watchdog's epoch advances.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// A time budget (`limits.timeout_ms`) in watchdog epochs.
pub fn timeout_ticks(timeout_ms: u64) -> u64 {
    timeout_ms.div_ceil(EPOCH_TICK.as_millis() as u64).max(1)
}

/// Start the thread that advances `engine`'s epoch every [`EPOCH_TICK`]
/// (the deadline behind `[limits] timeout_ms`); it ends once the engine
/// is gone. [`Sandbox::new`] starts one; a fork server's branch, a
/// process copied without its threads, starts its own (decision 0358).
pub fn start_watchdog(engine: &Engine) -> Result<()> {
    let watchdog = engine.weak();
    std::thread::Builder::new()
        .name("worldline-watchdog".into())
        .spawn(move || {
            // Ends once the engine is gone (the weak handle no longer upgrades).
            loop {
                std::thread::sleep(EPOCH_TICK);
                match watchdog.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })
        .context("starting the watchdog thread")?;
    Ok(())
}

/// How one engine setting is applied to the config.
type SetOption = fn(&mut Config);

/// Engine settings that decide what compiled code does: each one's name
/// (hashed, in this order, into the engine hash every bundle records) and
/// how it is set. The engine is configured from this table alone, so the
/// hash cannot drift from the settings. `no-threads` and
/// `no-shared-memory` are set by the build: wasmtime is compiled without
/// its `threads` feature.
const ENGINE_SETTINGS: &[(&str, SetOption)] = &[
    ("component-model", |c| {
        c.wasm_component_model(true);
    }),
    ("consume-fuel", |c| {
        c.consume_fuel(true);
    }),
    ("epoch-interruption", |c| {
        c.epoch_interruption(true);
    }),
    ("nan-canonicalization", |c| {
        c.cranelift_nan_canonicalization(true);
    }),
    ("relaxed-simd-deterministic", |c| {
        c.relaxed_simd_deterministic(true);
    }),
    ("no-threads", |_| {}),
    ("no-shared-memory", |_| {}),
    ("max-wasm-stack=1MiB", |c| {
        c.max_wasm_stack(1 << 20);
    }),
    ("opt-level=speed", |c| {
        c.cranelift_opt_level(wasmtime::OptLevel::Speed);
    }),
];

/// A compiled, pre-instantiated agent.
pub struct Agent {
    pub sha256: String,
    pub pre: AgentHostPre<RunState>,
}

/// Told when an agent is compiled (not found in the cache): its origin
/// and size in bytes. A command sets it to report the compile as progress.
pub type CompileNotice = Box<dyn Fn(&Path, usize) -> CompileProgress + Send + Sync>;

/// What a [`CompileNotice`] keeps while the compile runs (a progress
/// display, finished when it is dropped after the compile), if anything.
pub type CompileProgress = Option<Box<dyn std::any::Any + Send>>;

/// The engine, the linker and the agents loaded so far.
pub struct Sandbox {
    pub engine: Engine,
    linker: Linker<RunState>,
    engine_hash: String,
    cache: Option<CompileCache>,
    loaded: Mutex<BTreeMap<String, Arc<Agent>>>,
    on_compile: Option<CompileNotice>,
    /// World services (`service.rs`): their linker, made when the first
    /// is loaded (most runs' worlds have none), and those loaded so far.
    service_linker: std::sync::OnceLock<Linker<crate::mediate::service::ServiceData>>,
    services: Mutex<BTreeMap<String, Arc<crate::mediate::service::LoadedService>>>,
}

/// An agent file's bytes: a regular file of at most
/// [`bounded::COMPONENT`](worldline_case::bounded::COMPONENT) bytes (a FIFO or a
/// device is refused, never read).
pub fn read_agent(path: &Path) -> Result<Vec<u8>, InputError> {
    worldline_case::bounded::read(path, worldline_case::bounded::COMPONENT).map_err(|e| {
        InputError::new(
            path,
            format!("cannot read agent: {e}; pass the path of a built .wasm component"),
        )
    })
}

impl Sandbox {
    /// Build the engine and linker. Compiled components are cached under
    /// `cache_dir` (by engine hash and component SHA-256) when given.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self> {
        Self::with(cache_dir, wasmtime::InstanceAllocationStrategy::OnDemand)
    }

    /// [`new`](Self::new), each run's instances taken from a pool sized
    /// for `runs` runs at once (`pool.rs`): for commands that run many
    /// short runs.
    pub fn pooled(cache_dir: Option<PathBuf>, runs: usize) -> Result<Self> {
        Self::with(cache_dir, pool::strategy(runs))
    }

    fn with(
        cache_dir: Option<PathBuf>,
        instances: wasmtime::InstanceAllocationStrategy,
    ) -> Result<Self> {
        let names: Vec<&str> = ENGINE_SETTINGS.iter().map(|(name, _)| *name).collect();
        let engine_hash = canon::sha256_hex(format!(
            "wasmtime {}\n{}",
            wasmtime_version(),
            names.join("\n")
        ));
        let cache = cache_dir.map(|dir| CompileCache::new(&dir, &engine_hash));
        let mut config = Config::new();
        for (_, set) in ENGINE_SETTINGS {
            set(&mut config);
        }
        // How instances are allocated changes no compiled code, so it is
        // not an engine setting (the compile cache serves both).
        let pooled = matches!(instances, wasmtime::InstanceAllocationStrategy::Pooling(_));
        config.allocation_strategy(instances);
        // Nor does taking a function's code from the functions compiled
        // before (`functions.rs`).
        if let Some(cache) = &cache {
            config
                .enable_incremental_compilation(Arc::new(FunctionCache::new(cache.dir())))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let engine = Engine::new(&config).map_err(|e| match pooled && crate::mediate::host_failure(&e) {
            // The pool reserves its slots' address space up front.
            true => anyhow::anyhow!(
                "creating the wasm engine: {e:#}: the pool of instances for this command's runs reserves their address space at once, which this process's limit (`ulimit -v`) or the memory free does not allow; raise the limit, use fewer `--jobs`, or set WORLDLINE_INSTANCE_POOL=0 to make each run's instances as it needs them"
            ),
            false => anyhow::anyhow!("creating the wasm engine: {e:#}"),
        })?;
        let mut linker = Linker::new(&engine);
        AgentHost::add_to_linker::<RunState, HasSelf<RunState>>(
            &mut linker,
            &LinkOptions::default(),
            |s| s,
        )
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("linking the host interfaces")?;
        start_watchdog(&engine)?;
        Ok(Sandbox {
            service_linker: std::sync::OnceLock::new(),
            services: Mutex::new(BTreeMap::new()),
            engine,
            linker,
            cache,
            engine_hash,
            loaded: Mutex::new(BTreeMap::new()),
            on_compile: None,
        })
    }

    /// Call `notice` before compiling an agent the cache does not hold
    /// (what it returns is dropped once the compile is done).
    pub fn on_compile(mut self, notice: CompileNotice) -> Self {
        self.on_compile = Some(notice);
        self
    }

    /// SHA-256 of the engine settings and wasmtime version.
    pub fn engine_hash(&self) -> &str {
        &self.engine_hash
    }

    /// Load an agent from a file.
    pub fn load_file(&self, path: &Path) -> Result<Arc<Agent>> {
        let bytes = read_agent(path)?;
        self.load_bytes(&bytes, path)
    }

    /// Load an agent from its bytes (`origin` names it in errors). The same
    /// bytes are compiled at most once per process, and once per machine
    /// when a cache folder is set.
    pub fn load_bytes(&self, bytes: &[u8], origin: &Path) -> Result<Arc<Agent>> {
        self.load_hashed(bytes, canon::sha256_hex(bytes), origin)
    }

    /// [`load_bytes`](Self::load_bytes) for bytes already checked against
    /// their SHA-256 (objects read from the store).
    pub fn load_hashed(&self, bytes: &[u8], sha256: String, origin: &Path) -> Result<Arc<Agent>> {
        if let Some(agent) = self.loaded.lock().expect("agent cache lock").get(&sha256) {
            return Ok(agent.clone());
        }
        check_header(bytes, origin, Built::Agent)?;
        let component = self.compile(bytes, &sha256, origin, Built::Agent)?;
        self.prepare(&component, sha256, origin)
    }

    /// The agent with SHA-256 `sha256` when this process has loaded it or
    /// the compile cache holds it, without its bytes; `None` otherwise.
    pub fn load_compiled(&self, sha256: &str, origin: &Path) -> Result<Option<Arc<Agent>>> {
        if let Some(agent) = self.loaded.lock().expect("agent cache lock").get(sha256) {
            return Ok(Some(agent.clone()));
        }
        match self.deserialize_cached(sha256, Built::Agent) {
            Some(component) => Ok(Some(self.prepare(
                &component,
                sha256.to_string(),
                origin,
            )?)),
            None => Ok(None),
        }
    }

    /// Whether the compile cache holds the component with SHA-256
    /// `sha256` intact, so that another process of this machine loads it
    /// without compiling it.
    pub fn cached(&self, sha256: &str) -> bool {
        self.cache
            .as_ref()
            .is_some_and(|c| c.verified(sha256, Built::Agent.noun()).is_some())
    }

    /// Pre-instantiate a compiled component; when the linker refuses it,
    /// every import the host does not provide is named (the linker names
    /// the first), else the linker's reason. A component the linker takes
    /// imports only what the host provides, so the WIT is read for the
    /// list only then.
    fn prepare(&self, component: &Component, sha256: String, origin: &Path) -> Result<Arc<Agent>> {
        let pre = self.linker.instantiate_pre(component).map_err(|e| {
            match imports::check(&self.engine, component, origin) {
                Err(missing) => missing,
                Ok(()) => {
                    InputError::new(origin, format!("does not fit the worldline:agent ABI: {e}"))
                }
            }
        })?;
        let pre = AgentHostPre::new(pre).map_err(|e| {
            InputError::new(origin, format!("does not export `run` as worldline:agent/agent expects (built for another world?): {e}"))
        })?;
        let agent = Arc::new(Agent {
            sha256: sha256.clone(),
            pre,
        });
        self.loaded
            .lock()
            .expect("agent cache lock")
            .insert(sha256, agent.clone());
        Ok(agent)
    }

    /// The compiled component from the cache, if it is there, intact and
    /// loads.
    fn deserialize_cached(&self, sha256: &str, kind: Built) -> Option<Component> {
        let path = self.cache.as_ref()?.verified(sha256, kind.noun())?;
        // SAFETY: the file was written by `Component::serialize` of an
        // engine with the same settings (the folder is keyed by the engine
        // hash), lives in the user's own store, and matches the keyed
        // checksum written with it (or has not been written to since it
        // last did). It is memory-mapped, and CPython's initial heap is
        // mapped copy-on-write from it.
        unsafe { Component::deserialize_file(&self.engine, &path) }.ok()
    }

    /// Compile `bytes` (a `kind`: what the cache's warning names), or take
    /// them from the cache.
    fn compile(&self, bytes: &[u8], sha256: &str, origin: &Path, kind: Built) -> Result<Component> {
        if let Some(component) = self.deserialize_cached(sha256, kind) {
            return Ok(component);
        }
        // Another process or thread compiling the same component: wait for
        // it and load what it kept (`cache.rs`). Held until the entry is kept.
        let held = self.cache.as_ref().and_then(|c| c.compiling(sha256));
        if held.is_some()
            && let Some(component) = self.deserialize_cached(sha256, kind)
        {
            return Ok(component);
        }
        // Told only here, where this process compiles: one that waited for
        // another's compile said "compiling" and "compiled in" too.
        let _progress = self
            .on_compile
            .as_ref()
            .and_then(|n| n(origin, bytes.len()));
        let component = Component::new(&self.engine, bytes).map_err(|e| {
            InputError::new(origin, format!("is not a valid WebAssembly component: {e}"))
        })?;
        if let Some(cache) = &self.cache {
            let serialized = component.serialize().map_err(|e| anyhow::anyhow!("{e}"))?;
            cache.store(sha256, &serialized, kind.noun());
        }
        Ok(component)
    }
}

/// The wasmtime version this build links (a test holds it to Cargo.lock).
pub fn wasmtime_version() -> &'static str {
    "48.0.11"
}

/// What a component is loaded as, for what its errors advise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Built {
    Agent,
    Service,
}

impl Built {
    /// What the compile cache's warnings call a component of this kind.
    fn noun(self) -> &'static str {
        match self {
            Built::Agent => "agent",
            Built::Service => "world service",
        }
    }
}

/// Refuse files that are not WebAssembly components before compiling them,
/// saying how `kind` is built.
pub fn check_header(bytes: &[u8], origin: &Path, kind: Built) -> Result<(), InputError> {
    let (what, how) = match kind {
        Built::Agent => ("the .wasm an agent build produced", "the agent"),
        Built::Service => (
            "the component a service build produced (`worldline build-python --service`, or the worldline-service crate for wasm32-wasip2)",
            "the service",
        ),
    };
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(InputError::new(
            origin,
            format!("is not a WebAssembly file (no \\0asm header); pass {what}"),
        ));
    }
    if bytes[4..8] == [1, 0, 0, 0] {
        return Err(InputError::new(
            origin,
            format!(
                "is a core WebAssembly module, not a component; build {how} for `wasm32-wasip2` (`cargo build --target wasm32-wasip2`)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded version is the one Cargo.lock resolves.
    #[test]
    fn the_wasmtime_version_is_the_locked_one() {
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
                .expect("the workspace's Cargo.lock");
        let locked = lock
            .split("[[package]]")
            .find(|p| p.contains("\nname = \"wasmtime\"\n"))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .expect("wasmtime in Cargo.lock");
        assert_eq!(locked.trim_matches('"'), wasmtime_version());
    }

    /// A component another process is compiling into the cache is waited
    /// for and loaded from it, not compiled again.
    #[test]
    fn a_compile_under_way_elsewhere_is_waited_for_and_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let told = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = told.clone();
        let sandbox = Sandbox::new(Some(dir.path().to_path_buf()))
            .unwrap()
            .on_compile(Box::new(move |_, _| {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                None
            }));
        let empty: &[u8] = b"\0asm\x0d\x00\x01\x00";
        let sha = canon::sha256_hex(empty);
        let elsewhere = CompileCache::new(dir.path(), sandbox.engine_hash());
        let held = elsewhere.compiling(&sha).expect("the lock is free");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let loaded = sandbox.compile(empty, &sha, Path::new("empty.wasm"), Built::Agent);
                tx.send(loaded.is_ok()).unwrap();
            });
            assert!(
                rx.recv_timeout(Duration::from_millis(300)).is_err(),
                "the compile waits for the other one"
            );
            let other = Sandbox::new(None).unwrap();
            let compiled = Component::new(&other.engine, empty).unwrap();
            elsewhere.store(&sha, &compiled.serialize().unwrap(), "agent");
            let kept = std::fs::metadata(elsewhere.entry(&sha)).unwrap();
            drop(held);
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
            let after = std::fs::metadata(elsewhere.entry(&sha)).unwrap();
            use std::os::unix::fs::MetadataExt as _;
            assert_eq!(
                (kept.ino(), kept.mtime_nsec()),
                (after.ino(), after.mtime_nsec()),
                "the entry the other process kept is loaded, not written again"
            );
        });
        assert_eq!(
            told.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "a compile waited for is not said to be compiled here"
        );
    }

    /// The engine hash is the wasmtime version and the settings' names, one
    /// a line, as it was before the settings table was introduced: the
    /// same settings must give the same hash (bundles of wasmtime 48.0.8
    /// carry this text's hash with that version).
    #[test]
    fn the_engine_hash_is_stable() {
        let sandbox = Sandbox::new(None).unwrap();
        assert_eq!(
            sandbox.engine_hash(),
            canon::sha256_hex(
                "wasmtime 48.0.11\ncomponent-model\nconsume-fuel\nepoch-interruption\nnan-canonicalization\nrelaxed-simd-deterministic\nno-threads\nno-shared-memory\nmax-wasm-stack=1MiB\nopt-level=speed"
            )
        );
    }
}
