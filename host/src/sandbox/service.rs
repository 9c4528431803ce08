//! Loading world services: compile (through the compile cache), check the
//! imports (the service world and WASI only, never the agent's tools),
//! check the `call` export, pre-instantiate, and keep the result by
//! SHA-256 so every run of the process shares it.
//!
//! Services run on an engine of their own: the agents' settings (so the
//! compiled code and the compile cache are the same) with wasmtime's
//! pooling allocator. Every service call is a fresh instance, and the pool
//! keeps linear memories mapped between instances and puts back only the
//! pages a call dirtied, instead of mapping and unmapping memory per call.

use super::Sandbox;
use crate::error::InputError;
use crate::mediate::RunState;
use crate::mediate::bindings::{AgentHost, LinkOptions};
use crate::mediate::model::slots::Slots;
use crate::mediate::service::bindings::{Service, ServicePre};
use crate::mediate::service::{LoadedService, ServiceData};
use crate::world::service::ServiceSource;
use anyhow::{Context as _, Result};
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// The package of the service world's own interfaces.
const SERVICE_PACKAGE: &str = "worldline:service/";

/// Service instances that may exist at once in one process (the pool's
/// size); a call waits for one past that. Calls run inside runs, at most
/// one per run, and runs compute one per core.
const POOL_INSTANCES: u32 = 16;

/// The services' engine and linker, and the pool's free instances.
pub(super) struct ServiceEngine {
    engine: Engine,
    linker: Linker<ServiceData>,
    instances: Arc<Slots>,
}

impl ServiceEngine {
    pub(super) fn new() -> Result<Self> {
        let mut pool = PoolingAllocationConfig::new();
        // Room for components of many core modules (a CPython service has
        // a dozen), each memory up to the largest `[service] memory_mb`.
        pool.total_component_instances(POOL_INSTANCES)
            .total_core_instances(POOL_INSTANCES * 64)
            .total_memories(POOL_INSTANCES * 4)
            .total_tables(POOL_INSTANCES * 64)
            .max_memory_size(4 << 30)
            .max_core_instance_size(8 << 20)
            .max_component_instance_size(8 << 20)
            // Reset what a call dirtied with memset, not by unmapping:
            // a reused slot takes no page faults for its warm pages.
            .linear_memory_keep_resident(64 << 20)
            .table_keep_resident(1 << 20)
            .pagemap_scan(Enabled::Auto);
        let mut config = super::config();
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("creating the services' wasm engine")?;
        super::watch(&engine)?;
        let linker = linker(&engine).context("linking the service interfaces")?;
        Ok(ServiceEngine {
            engine,
            linker,
            instances: Slots::new(POOL_INSTANCES),
        })
    }
}

/// The linker of service stores: the service world, and WASI answered by
/// the service's own mediator.
fn linker(engine: &Engine) -> Result<Linker<ServiceData>> {
    let mut linker = Linker::new(engine);
    // The agent host world is linked too (it carries WASI); `check`
    // refuses a service that imports `worldline:agent`, so only WASI of it
    // is reachable.
    AgentHost::add_to_linker::<ServiceData, HasSelf<RunState>>(
        &mut linker,
        &LinkOptions::default(),
        |d| &mut d.run,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    Service::add_to_linker::<ServiceData, HasSelf<ServiceData>>(&mut linker, |d| d)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(linker)
}

impl Sandbox {
    /// The world service `source`, loaded once per process (and compiled
    /// once per machine with a compile cache).
    pub fn service(&self, source: &ServiceSource) -> Result<Arc<LoadedService>> {
        if let Some(s) = self
            .services
            .lock()
            .expect("service cache lock")
            .get(&source.sha256)
        {
            return Ok(s.clone());
        }
        let services = self
            .service_engine
            .get_or_init(|| ServiceEngine::new().map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let origin = source.file.as_path();
        super::check_header(&source.bytes, origin)?;
        let component = self.compile(&services.engine, &source.bytes, &source.sha256, origin)?;
        check(&services.engine, &component, origin)?;
        let pre = services.linker.instantiate_pre(&component).map_err(|e| {
            InputError::new(
                origin,
                format!("is not a worldline service (worldline:service/service): {e}"),
            )
        })?;
        let pre = ServicePre::new(pre).map_err(|e| {
            InputError::new(
                origin,
                format!(
                    "is not a worldline service: it does not export `call` as worldline:service/service expects ({e}); build it with the worldline-service crate's `service!` macro"
                ),
            )
        })?;
        let loaded = Arc::new(LoadedService {
            component: source.component.clone(),
            sha256: source.sha256.clone(),
            pre,
            instances: services.instances.clone(),
        });
        self.services
            .lock()
            .expect("service cache lock")
            .insert(source.sha256.clone(), loaded.clone());
        Ok(loaded)
    }
}

/// Refuse a service that imports anything but the service world and WASI.
fn check(
    engine: &Engine,
    component: &Component,
    origin: &std::path::Path,
) -> Result<(), InputError> {
    let refused: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .filter(|name| {
            !(name.starts_with(SERVICE_PACKAGE)
                || (name.starts_with("wasi:") && super::imports::provided(name)))
        })
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(InputError::new(
            origin,
            format!(
                "is not a worldline service: it imports {} (a service may import worldline:service/state, worldline:service/env and WASI 0.2)",
                refused.join(", ")
            ),
        ))
    }
}
