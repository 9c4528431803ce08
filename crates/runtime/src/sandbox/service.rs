//! Loading world services: compile (through the compile cache), check the
//! imports (the service world and WASI only, never the agent's tools),
//! check the `call` export, pre-instantiate, and keep the result by
//! SHA-256 so every run of the process shares it.
//!
//! Why services are validated here (was decision 0072): `world.toml` refuses
//! `op = "service"` tools without `[service]` (and the reverse) at load time,
//! with the line, but compiling and type-checking the component needs the
//! engine, which world loading does not have. So `Sandbox::service` does it
//! before the world's first run (exit 2, naming the file: not a component,
//! imports it may not have, no `call` export of the right type) rather than at
//! the first call, with a run half done. [`unfit`] reads the same imports
//! without compiling, for `worldline check`.

use super::Sandbox;
use crate::mediate::RunState;
use crate::mediate::bindings::{AgentHost, LinkOptions};
use crate::mediate::service::bindings::{Service, ServicePre};
use crate::mediate::service::{LoadedService, ServiceData};
use anyhow::{Context as _, Result};
use std::sync::Arc;
use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};
use worldline_case::error::InputError;
use worldline_case::world::service::ServiceSource;

/// The package of the service world's own interfaces.
const SERVICE_PACKAGE: &str = "worldline:service/";

/// The linker of service stores: the service world, and WASI answered by
/// the service's own mediator.
pub(super) fn linker(engine: &Engine) -> Result<Linker<ServiceData>> {
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
    /// The services' linker, made on first use.
    fn service_linker(&self) -> Result<&Linker<ServiceData>> {
        if let Some(linker) = self.service_linker.get() {
            return Ok(linker);
        }
        let linker = linker(&self.engine).context("linking the service interfaces")?;
        Ok(self.service_linker.get_or_init(|| linker))
    }

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
        let origin = source.file.as_path();
        super::check_header(&source.bytes, origin, super::Built::Service)?;
        let component =
            self.compile(&source.bytes, &source.sha256, origin, super::Built::Service)?;
        check(&self.engine, &component, origin)?;
        let pre = self
            .service_linker()?
            .instantiate_pre(&component)
            .map_err(|e| {
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
    let ty = component.component_type();
    refused(origin, ty.imports(engine).map(|(name, _)| name.to_string()))
}

/// What keeps the component `bytes` (at `origin`) from being a world
/// service, read without compiling it (`worldline check`, which runs
/// nothing): not a component, or an import a service may not have. The
/// `call` export's type is checked when a run loads it.
pub fn unfit(bytes: &[u8], origin: &std::path::Path) -> Result<(), InputError> {
    super::check_header(bytes, origin, super::Built::Service)?;
    let unreadable = |e: wasmparser::BinaryReaderError| {
        InputError::new(origin, format!("is not a readable component: {e}"))
    };
    // The component's own imports: nested modules' and components' are
    // within it (depth over 1).
    let (mut depth, mut names) = (0usize, Vec::new());
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.map_err(unreadable)? {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    let import = import.map_err(unreadable)?;
                    // A type a function of it names, not something linked.
                    if !matches!(import.ty, wasmparser::ComponentTypeRef::Type(_)) {
                        names.push(import.name.name.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    refused(origin, names.into_iter())
}

/// Refuse imports other than the service world's and the WASI the
/// sandbox provides.
fn refused(
    origin: &std::path::Path,
    names: impl Iterator<Item = String>,
) -> Result<(), InputError> {
    let refused: Vec<String> = names
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
