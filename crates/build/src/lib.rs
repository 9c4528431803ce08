//! Building guests: a Python agent or world service with componentize-py
//! ([`python`]), a JavaScript or TypeScript agent with esbuild and
//! ComponentizeJS ([`js`]), each against the WIT package the binary
//! carries and with the guest SDK written beside it; the pinned toolchains
//! they need and how to install them. Nothing here runs a guest: this
//! crate stands on `worldline-case` alone and never compiles wasmtime. It
//! prints nothing: a build returns what it built and tells its caller what
//! it is doing.

#![deny(unreachable_pub)]

pub mod js;
pub mod python;
mod tree;

/// What to do when a build failed because the agent's module calls the host
/// at its top level, which runs once when the agent is built (a snapshot
/// of it is what runs), where no host answers: the import it called, from
/// the builder's words (ComponentizeJS's Wizer "unknown imported function",
/// componentize-py's "trapping stub").
fn top_level_host_call(said: &str) -> Option<String> {
    let import = if let Some(at) = said.find("attempted to call an unknown imported function: ") {
        let rest = &said[at + "attempted to call an unknown imported function: ".len()..];
        let line = rest.lines().next().unwrap_or("");
        line.replace('\'', "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(".")
    } else if let Some(at) = said.find("called trapping stub: ") {
        let rest = &said[at + "called trapping stub: ".len()..];
        rest.split_whitespace().next().unwrap_or("").to_string()
    } else {
        return None;
    };
    Some(format!(
        "the agent's module calls the host (`{import}`) at its top level, which runs when the agent is built, not in a run: move the call into `run` (the time, randomness, tools and the world answer only there)"
    ))
}

#[cfg(test)]
mod tests {
    /// A host call at a module's top level is said as such, naming the
    /// import (the builders' own words named no line and no remedy).
    #[test]
    fn a_top_level_host_call_is_named_with_what_to_do() {
        let js = "  agent/agent.ts: Failed to initialize component\n1: Error: attempted to call an unknown imported function: 'wasi:random/random@0.2.10' 'get-random-u64'\n   You cannot call arbitrary imported functions during Wizer initialization.";
        let said = super::top_level_host_call(js).unwrap();
        assert!(said.starts_with("the agent's module calls the host (`wasi:random/random@0.2.10.get-random-u64`) at its top level"), "{said}");
        let py = "AssertionError:\ncalled trapping stub: worldline:agent/tools@0.1.0#call\n";
        let said = super::top_level_host_call(py).unwrap();
        assert!(
            said.contains("(`worldline:agent/tools@0.1.0#call`)"),
            "{said}"
        );
        assert_eq!(
            super::top_level_host_call("SyntaxError: invalid syntax"),
            None
        );
    }
}
