//! Building guests: a Python agent or world service with componentize-py
//! ([`python`]), a JavaScript or TypeScript agent with esbuild and
//! ComponentizeJS ([`js`]), each against the WIT package the binary
//! carries and with the guest SDK written beside it; the pinned toolchains
//! they need and how to install them. Nothing here runs a guest: this
//! crate stands on `worldline-case` alone and never compiles wasmtime. It
//! prints nothing: a build returns what it built and tells its caller what
//! it is doing.

#![deny(unreachable_pub)]

mod helper;
pub mod js;
pub mod python;
mod tree;

/// Refuse an agent path that is no file: a folder (it was said to be no
/// such file) names the file a project keeps in it, if there is one.
fn agent_file(
    agent: &std::path::Path,
    kind: &str,
    names: &[&str],
) -> Result<(), worldline_case::error::InputError> {
    if agent.is_file() {
        return Ok(());
    }
    let message = if agent.is_dir() {
        let inside = names.iter().map(|n| agent.join(n)).find(|p| p.is_file());
        match inside {
            Some(p) => format!(
                "is a folder; pass the agent's {kind} file inside it ({})",
                p.display()
            ),
            None => format!("is a folder; pass the agent's {kind} file"),
        }
    } else {
        format!("no such file; pass the agent's {kind} file")
    };
    Err(worldline_case::error::InputError::new(agent, message))
}

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
    /// A folder given as the agent is said to be one, naming the agent
    /// file in it (it was "no such file" for a folder that exists).
    #[test]
    fn a_folder_given_as_the_agent_names_the_file_in_it() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let said = super::agent_file(&src, ".rs", &["agent.rs", "lib.rs"])
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("is a folder; pass the agent's .rs file inside it ("),
            "{said}"
        );
        assert!(said.contains("lib.rs)"), "{said}");
        let none = super::agent_file(&src, ".py", &["agent.py"])
            .unwrap_err()
            .to_string();
        assert!(
            none.ends_with("is a folder; pass the agent's .py file"),
            "{none}"
        );
        let missing = super::agent_file(&src.join("nope.py"), ".py", &["agent.py"]).unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("no such file; pass the agent's .py file")
        );
        super::agent_file(&src.join("lib.rs"), ".rs", &[]).unwrap();
    }

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
