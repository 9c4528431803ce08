//! The files of a new project (`worldline init`): a world with a
//! declarative tool and a service tool, two cases (one the agent passes,
//! one it fails for a reason its source states), the agent and the
//! service in the chosen language, a build script, `worldline.toml`, a
//! README of next steps and editor settings (a TypeScript agent's
//! `tsconfig.json` is the one `build-js` writes). The templates live in
//! `templates/` and are compiled in.

/// The languages an agent can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Python,
    Ts,
}

impl Lang {
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Ts => "ts",
        }
    }

    /// The built agent, relative to the project.
    pub fn agent_wasm(self) -> &'static str {
        match self {
            Lang::Rust => "target/wasm32-wasip2/release/agent.wasm",
            Lang::Python | Lang::Ts => "build/agent.wasm",
        }
    }
}

/// A file of the project: its path inside it, its text, and whether it is
/// a program to run.
pub struct File {
    pub path: &'static str,
    pub text: String,
    pub executable: bool,
}

macro_rules! template {
    ($path:literal) => {
        include_str!(concat!("templates/", $path))
    };
}

/// Every file of a new project named `name` in `lang`; `sdk` is the
/// worldline source folder the Rust SDKs are taken from.
pub fn files(lang: Lang, name: &str, sdk: &str) -> Vec<File> {
    let (agent_source, service_source) = match lang {
        Lang::Rust => ("agent/src/lib.rs", "service/src/lib.rs"),
        Lang::Python => ("agent/agent.py", "service/tasks_service.py"),
        Lang::Ts => ("agent/agent.ts", "service/tasks_service.py"),
    };
    let build_needs = match lang {
        Lang::Rust => "cargo and the wasm32-wasip2 target",
        Lang::Python => "componentize-py",
        Lang::Ts => "componentize-py for the service, Node.js for the agent",
    };
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{lang}}", lang.name())
            .replace("{{agent_source}}", agent_source)
            .replace("{{agent_source_padded}}", &format!("{agent_source:<30}"))
            .replace("{{service_source}}", &format!("{service_source:<30}"))
            .replace("{{build_needs}}", build_needs)
            .replace("{{agent_wasm}}", lang.agent_wasm())
            .replace("{{sdk}}", sdk)
    };
    let file = |path: &'static str, text: &str| File {
        path,
        text: fill(text),
        executable: false,
    };
    let mut out = vec![
        file("README.md", template!("common/README.md")),
        file("worldline.toml", template!("common/worldline.toml")),
        file(".gitignore", template!("common/gitignore")),
        file("worlds/tasks/v1/world.toml", template!("common/world.toml")),
        file(
            "worlds/tasks/v1/data/tasks.jsonl",
            template!("common/tasks.jsonl"),
        ),
        file(
            "cases/complete-one.toml",
            template!("common/complete-one.toml"),
        ),
        file(
            "cases/complete-overdue.toml",
            template!("common/complete-overdue.toml"),
        ),
    ];
    let build = |text: &str| File {
        path: "build.sh",
        text: fill(text),
        executable: true,
    };
    match lang {
        Lang::Rust => out.extend([
            file("Cargo.toml", template!("rust/Cargo.toml")),
            file("agent/Cargo.toml", template!("rust/agent/Cargo.toml")),
            file("agent/src/lib.rs", template!("rust/agent/lib.rs")),
            file("service/Cargo.toml", template!("rust/service/Cargo.toml")),
            file("service/src/lib.rs", template!("rust/service/lib.rs")),
            file(
                ".vscode/settings.json",
                template!("rust/vscode-settings.json"),
            ),
            build(template!("rust/build.sh")),
        ]),
        Lang::Python => out.extend([
            file("agent/agent.py", template!("python/agent.py")),
            file(
                "service/tasks_service.py",
                template!("python/tasks_service.py"),
            ),
            file(
                ".vscode/settings.json",
                template!("python/vscode-settings.json"),
            ),
            file("pyrightconfig.json", template!("python/pyrightconfig.json")),
            build(template!("python/build.sh")),
        ]),
        Lang::Ts => out.extend([
            file("agent/agent.ts", template!("ts/agent.ts")),
            file(
                "service/tasks_service.py",
                template!("python/tasks_service.py"),
            ),
            // The service is Python: its editor settings as a Python
            // project's.
            file(
                ".vscode/settings.json",
                template!("ts/vscode-settings.json"),
            ),
            file("pyrightconfig.json", template!("python/pyrightconfig.json")),
            build(template!("ts/build.sh")),
        ]),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        for lang in [Lang::Rust, Lang::Python, Lang::Ts] {
            for f in files(lang, "demo", "/src/worldline") {
                assert!(!f.text.contains("{{"), "{} in {lang:?}", f.path);
            }
        }
    }
}
