//! Worlds: versioned seeds of simulated state plus the tools that act on it,
//! loaded from `worlds/<name>/v<N>/world.toml` and its data files.
//!
//! Every file is read through a capability-based directory handle opened on
//! the world's own folder, so a world cannot read outside it (`../`,
//! absolute paths and symlinks that leave the folder are refused).

pub mod schema;
pub mod state;
pub mod tools;

use crate::canon;
use crate::error::InputError;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde::Deserialize;
use serde_json::Value;
use state::{FileData, State, Table};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
pub use tools::{Op, Tool};

/// A loaded world version.
#[derive(Debug, Clone)]
pub struct World {
    pub name: String,
    pub version: u32,
    pub description: String,
    /// The folder it was loaded from.
    pub dir: PathBuf,
    /// SHA-256 over every file it loaded (path and content): the hash of
    /// the canonical JSON of `manifest`.
    pub hash: String,
    /// Every file it loaded: path inside the world folder → SHA-256.
    pub manifest: BTreeMap<String, String>,
    /// Tools in declared order.
    pub tools: Vec<Tool>,
    pub permissions: Permissions,
    pub initial: State,
}

impl World {
    /// `name@vN`.
    pub fn reference(&self) -> String {
        format!("{}@v{}", self.name, self.version)
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// Which calls are allowed: rules are tool names or globs (`ticket.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    #[serde(default)]
    pub default: Access,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// What a permission table grants a call no rule names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    #[default]
    Allow,
    Deny,
}

impl Permissions {
    /// `Some(true/false)` when a rule here decides; `None` when none matches.
    pub fn decide(&self, name: &str) -> Option<bool> {
        if self.deny.iter().any(|g| glob_match(g, name)) {
            Some(false)
        } else if self.allow.iter().any(|g| glob_match(g, name)) {
            Some(true)
        } else {
            None
        }
    }
}

/// Permission names of the world-file interface (`worldline:agent/files`).
pub const FILE_PERMISSIONS: [&str; 3] = ["files.read", "files.write", "files.paths"];

/// Whether a name or glob matches any of `tools`.
pub fn names_a_tool(glob: &str, tools: &[Tool]) -> bool {
    tools.iter().any(|t| glob_match(glob, &t.name))
}

impl Permissions {
    /// The first rule that names neither a tool nor a world-file permission
    /// (a typo that would otherwise silently never match).
    pub fn rule_naming_nothing(&self, tools: &[Tool]) -> Option<&String> {
        self.allow.iter().chain(&self.deny).find(|rule| {
            !names_a_tool(rule, tools) && !FILE_PERMISSIONS.iter().any(|f| glob_match(rule, f))
        })
    }
}

/// `*` matches any run of characters, `?` any one character.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorldToml {
    name: String,
    version: u32,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tables: BTreeMap<String, toml::Spanned<TableToml>>,
    #[serde(default)]
    files: Option<FilesToml>,
    #[serde(default)]
    permissions: Permissions,
    #[serde(default)]
    tools: Vec<toml::Spanned<tools::ToolToml>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableToml {
    key: String,
    /// A `.json` file holding an array of rows, or a `.jsonl` file of rows.
    #[serde(default)]
    rows: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilesToml {
    /// Every file under this folder becomes a world file, named by its path
    /// relative to the folder.
    dir: String,
}

/// Split `name@vN`.
pub fn parse_reference(reference: &str) -> Option<(&str, u32)> {
    let (name, version) = reference.split_once("@v")?;
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let version = version.parse().ok()?;
    valid_name.then_some((name, version))
}

/// Load `name@vN` from a `worlds/` folder. `referrer` is the file that named
/// the world (for error messages).
pub fn load(worlds_root: &Path, reference: &str, referrer: &Path) -> Result<World, InputError> {
    let (name, version) = parse_reference(reference).ok_or_else(|| {
        InputError::new(
            referrer,
            format!("world `{reference}` is not of the form name@vN (for example incident@v4)"),
        )
    })?;
    let world_dir = worlds_root.join(name).join(format!("v{version}"));
    if !world_dir.join("world.toml").is_file() {
        let mut known: Vec<String> = std::fs::read_dir(worlds_root.join(name))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| e.path().join("world.toml").is_file())
                    .map(|e| format!("{name}@{}", e.file_name().to_string_lossy()))
                    .collect()
            })
            .unwrap_or_default();
        known.sort();
        let hint = if known.is_empty() {
            format!("no world named `{name}` under {}", worlds_root.display())
        } else {
            format!("versions that exist: {}", known.join(", "))
        };
        return Err(InputError::new(
            referrer,
            format!(
                "world `{reference}` not found ({} has no world.toml); {hint}",
                world_dir.display()
            ),
        ));
    }
    load_dir(&world_dir)
}

/// Load the world in one folder.
pub fn load_dir(world_dir: &Path) -> Result<World, InputError> {
    let toml_path = world_dir.join("world.toml");
    let dir = Dir::open_ambient_dir(world_dir, ambient_authority())
        .map_err(|e| InputError::new(world_dir, format!("cannot open world folder: {e}")))?;
    let mut hashed: BTreeMap<String, String> = BTreeMap::new();
    let source = read_text(&dir, world_dir, "world.toml", &mut hashed)?;
    let doc: WorldToml =
        toml::from_str(&source).map_err(|e| InputError::toml(&toml_path, &source, &e))?;

    let mut initial = State::default();
    for (table_name, spanned) in &doc.tables {
        let at = spanned.span().start;
        let t = spanned.get_ref();
        let mut rows = BTreeMap::new();
        if let Some(rel) = &t.rows {
            let file = world_dir.join(rel);
            let text = read_text(&dir, world_dir, rel, &mut hashed).map_err(|e| InputError {
                line: e.line.or(Some(crate::error::line_col(&source, at))),
                ..e
            })?;
            for (line, row) in parse_rows(&file, rel, &text)? {
                let key = match row.get(&t.key) {
                    Some(k) if !k.is_null() => canon::key_of(k),
                    _ => {
                        return Err(InputError {
                            line: Some((line, 1)),
                            ..InputError::new(
                                &file,
                                format!("row has no key field `{}` (table `{table_name}`)", t.key),
                            )
                        });
                    }
                };
                if rows.insert(key.clone(), row).is_some() {
                    return Err(InputError {
                        line: Some((line, 1)),
                        ..InputError::new(
                            &file,
                            format!("duplicate key `{key}` in table `{table_name}`"),
                        )
                    });
                }
            }
        }
        initial.tables.insert(
            table_name.clone(),
            Table {
                key: t.key.clone(),
                rows,
            },
        );
    }
    if let Some(files) = &doc.files {
        check_relative(&files.dir)
            .map_err(|m| InputError::new(&toml_path, format!("[files] dir: {m}")))?;
        let sub = dir.open_dir(&files.dir).map_err(|e| {
            InputError::new(&toml_path, format!("[files] dir `{}`: {e}", files.dir))
        })?;
        let mut found = Vec::new();
        walk(&sub, "", &mut found)
            .map_err(|e| InputError::new(world_dir.join(&files.dir), e.to_string()))?;
        for (path, bytes) in found {
            hashed.insert(format!("{}/{path}", files.dir), canon::sha256_hex(&bytes));
            initial.files.insert(path, FileData::from_bytes(bytes));
        }
    }

    let mut tool_list: Vec<Tool> = Vec::new();
    for spanned in &doc.tools {
        let at = spanned.span().start;
        let tool = tools::resolve(spanned.get_ref(), &initial)
            .map_err(|m| InputError::at(&toml_path, &source, at, m))?;
        if tool_list.iter().any(|t| t.name == tool.name) {
            return Err(InputError::at(
                &toml_path,
                &source,
                at,
                format!("tool `{}` is declared twice", tool.name),
            ));
        }
        tool_list.push(tool);
    }
    if let Some(rule) = doc.permissions.rule_naming_nothing(&tool_list) {
        return Err(InputError::new(
            &toml_path,
            format!("[permissions] rule `{rule}` names no tool of this world"),
        ));
    }
    if doc.name.is_empty() {
        return Err(InputError::new(&toml_path, "`name` is empty"));
    }

    Ok(World {
        name: doc.name,
        version: doc.version,
        description: doc.description,
        dir: world_dir.to_path_buf(),
        hash: canon::hash_json(&hashed),
        manifest: hashed,
        tools: tool_list,
        permissions: doc.permissions,
        initial,
    })
}

/// Refuse paths that could leave the folder before even trying them.
pub fn check_relative(rel: &str) -> Result<(), String> {
    let p = Path::new(rel);
    if p.is_absolute() || rel.starts_with('/') || rel.starts_with('\\') {
        return Err(format!("`{rel}` is absolute; use a path inside the folder"));
    }
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!(
            "`{rel}` leaves the folder (`..`); use a path inside it"
        ));
    }
    Ok(())
}

fn read_text(
    dir: &Dir,
    base: &Path,
    rel: &str,
    hashed: &mut BTreeMap<String, String>,
) -> Result<String, InputError> {
    let file = base.join(rel);
    check_relative(rel).map_err(|m| InputError::new(&file, m))?;
    let bytes = dir.read(rel).map_err(|e| {
        let why = if e.kind() == std::io::ErrorKind::PermissionDenied
            || e.to_string().contains("outside")
        {
            "it resolves outside the folder (a symlink out?)".to_string()
        } else {
            e.to_string()
        };
        InputError::new(&file, format!("cannot read: {why}"))
    })?;
    hashed.insert(rel.to_string(), canon::sha256_hex(&bytes));
    String::from_utf8(bytes).map_err(|_| InputError::new(&file, "not UTF-8 text"))
}

/// Rows of a `.json` array or `.jsonl` file, each with its line number.
fn parse_rows(file: &Path, rel: &str, text: &str) -> Result<Vec<(usize, Value)>, InputError> {
    let bad = |line: usize, col: usize, m: String| InputError {
        line: Some((line, col)),
        ..InputError::new(file, m)
    };
    if rel.ends_with(".jsonl") {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value =
                serde_json::from_str(line).map_err(|e| bad(i + 1, e.column(), e.to_string()))?;
            if !v.is_object() {
                return Err(bad(i + 1, 1, "each line must be a JSON object".into()));
            }
            out.push((i + 1, v));
        }
        Ok(out)
    } else if rel.ends_with(".json") {
        let v: Value =
            serde_json::from_str(text).map_err(|e| bad(e.line(), e.column(), e.to_string()))?;
        let rows = v
            .as_array()
            .ok_or_else(|| bad(1, 1, "expected a JSON array of rows".into()))?;
        rows.iter()
            .map(|r| {
                if r.is_object() {
                    Ok((1, r.clone()))
                } else {
                    Err(bad(1, 1, "every row must be a JSON object".into()))
                }
            })
            .collect()
    } else {
        Err(InputError::new(
            file,
            "rows must be a .json (array) or .jsonl file",
        ))
    }
}

fn walk(dir: &Dir, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    let mut entries: Vec<_> = dir.entries()?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().to_string();
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let ft = e.file_type()?;
        if ft.is_dir() {
            walk(&e.open_dir()?, &path, out)?;
        } else if ft.is_file() {
            out.push((path, dir.read(&name)?));
        } else {
            return Err(std::io::Error::other(format!(
                "`{path}` is a symlink or special file; world files must be plain files"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names() {
        assert!(glob_match("ticket.*", "ticket.close"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("close_?", "close_a"));
        assert!(!glob_match("ticket.*", "alert.get"));
    }

    #[test]
    fn references_parse() {
        assert_eq!(parse_reference("incident@v4"), Some(("incident", 4)));
        assert_eq!(parse_reference("incident"), None);
        assert_eq!(parse_reference("../x@v1"), None);
    }

    #[test]
    fn relative_paths_must_stay_inside() {
        assert!(check_relative("data/rows.jsonl").is_ok());
        assert!(check_relative("../secret").is_err());
        assert!(check_relative("/etc/passwd").is_err());
    }
}
