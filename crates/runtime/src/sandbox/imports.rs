//! Import checking: a component that imports anything the host does not
//! provide is refused before it runs, with the whole list of what is
//! missing (not just the first).
//!
//! Why every missing import is listed at once (was decision 0011): wasmtime's
//! linker reports only the first missing import, and a user fixing a build
//! wants them all; so when the linker refuses a component, its imports are
//! compared with the interfaces the host links, WASI 0.2.x versions treated
//! as one, and every one missing is named rather than the linker's first.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;
use wasmtime::Engine;
use wasmtime::component::Component;
use worldline_case::error::InputError;
use worldline_case::wit;

/// The world the host links: `worldline:agent` plus WASI 0.2.
pub(crate) const HOST_WORLD: &str = "worldline:agent/agent-host@0.1.0";

/// Every interface the host links, read from the embedded WIT once.
pub(crate) fn provided_interfaces() -> &'static BTreeSet<String> {
    static PROVIDED: OnceLock<BTreeSet<String>> = OnceLock::new();
    PROVIDED.get_or_init(|| wit::world_imports(HOST_WORLD))
}

/// `(name, version)` of `ns:pkg/iface@version`.
fn split(name: &str) -> (&str, Option<&str>) {
    match name.split_once('@') {
        Some((n, v)) => (n, Some(v)),
        None => (name, None),
    }
}

/// Versions the linker treats as the same interface: same major, and for
/// 0.x the same minor.
fn compatible(a: &str, b: &str) -> bool {
    let parts = |v: &str| {
        v.split('.')
            .map(|p| p.parse::<u64>().unwrap_or(u64::MAX))
            .collect::<Vec<_>>()
    };
    let (a, b) = (parts(a), parts(b));
    match (a.first(), b.first()) {
        (Some(0), Some(0)) => a.get(1) == b.get(1),
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Whether the host provides an imported interface.
pub(crate) fn provided(import: &str) -> bool {
    let (name, version) = split(import);
    provided_interfaces().iter().any(|p| {
        let (pn, pv) = split(p);
        pn == name && matches!((version, pv), (Some(v), Some(pv)) if compatible(v, pv))
    })
}

/// Refuse a component with imports the host does not provide.
pub(crate) fn check(
    engine: &Engine,
    component: &Component,
    origin: &Path,
) -> Result<(), InputError> {
    let missing: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .filter(|name| !provided(name))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else if missing.iter().any(|m| m.starts_with("worldline:service/")) {
        // A world service given as the agent (`check` says so of the
        // reverse): "does not provide" blamed worldline.
        Err(InputError::new(
            origin,
            "is a world service (it imports worldline:service), not an agent: name the agent's component with --agent, and the service in the world's [service] component",
        ))
    } else {
        Err(InputError::new(
            origin,
            format!(
                "imports what worldline does not provide: {} (an agent may import worldline:agent and WASI 0.2 cli, clocks, io, random, filesystem, sockets and http)",
                missing.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host world's imports as read from the WIT: what the linker
    /// links (`@unstable` timezone left out, `types` in through `use`).
    #[test]
    fn the_host_world_is_read_from_the_wit() {
        let expected = [
            "wasi:cli/environment@0.2.12",
            "wasi:cli/exit@0.2.12",
            "wasi:cli/stderr@0.2.12",
            "wasi:cli/stdin@0.2.12",
            "wasi:cli/stdout@0.2.12",
            "wasi:cli/terminal-input@0.2.12",
            "wasi:cli/terminal-output@0.2.12",
            "wasi:cli/terminal-stderr@0.2.12",
            "wasi:cli/terminal-stdin@0.2.12",
            "wasi:cli/terminal-stdout@0.2.12",
            "wasi:clocks/monotonic-clock@0.2.12",
            "wasi:clocks/wall-clock@0.2.12",
            "wasi:filesystem/preopens@0.2.12",
            "wasi:filesystem/types@0.2.12",
            "wasi:http/outgoing-handler@0.2.12",
            "wasi:http/types@0.2.12",
            "wasi:io/error@0.2.12",
            "wasi:io/poll@0.2.12",
            "wasi:io/streams@0.2.12",
            "wasi:random/insecure-seed@0.2.12",
            "wasi:random/insecure@0.2.12",
            "wasi:random/random@0.2.12",
            "wasi:sockets/instance-network@0.2.12",
            "wasi:sockets/ip-name-lookup@0.2.12",
            "wasi:sockets/network@0.2.12",
            "wasi:sockets/tcp-create-socket@0.2.12",
            "wasi:sockets/tcp@0.2.12",
            "wasi:sockets/udp-create-socket@0.2.12",
            "wasi:sockets/udp@0.2.12",
            "worldline:agent/approval@0.1.0",
            "worldline:agent/files@0.1.0",
            "worldline:agent/model@0.1.0",
            "worldline:agent/tools@0.1.0",
            "worldline:agent/trace@0.1.0",
            "worldline:agent/types@0.1.0",
            "worldline:agent/user@0.1.0",
        ];
        let got: Vec<&str> = provided_interfaces().iter().map(String::as_str).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn older_wasi_patch_versions_are_provided() {
        assert!(provided("wasi:cli/environment@0.2.0"));
        assert!(provided("wasi:io/streams@0.2.3"));
        assert!(provided("worldline:agent/tools@0.1.0"));
    }

    #[test]
    fn other_interfaces_and_versions_are_missing() {
        assert!(!provided("wasi:http/incoming-handler@0.2.0"));
        assert!(!provided("wasi:cli/environment@0.3.0"));
        assert!(!provided("worldline:agent/tools"));
        assert!(!provided("acme:evil/backdoor@1.0.0"));
    }
}
