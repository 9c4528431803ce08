//! Worlds: versioned seeds of simulated state plus the tools that act on it,
//! loaded from `worlds/<name>/v<N>/world.toml` and its data files (read
//! through `folder.rs`, so a world cannot read outside its folder).
//!
//! Why row lines in `.json` data files come from a small scanner over text that
//! already parsed (was decision 0061): serde_json gives no position for a value
//! that parses, and an error about a row should name its line; serde_json's
//! `raw_value` feature would rebuild every crate that depends on serde_json for
//! one error message.

pub(crate) mod cache;
pub use cache::one_pass;
pub mod compare;
pub(crate) mod declared;
pub(crate) mod digest;
pub mod file_path;
pub(crate) mod folder;
pub(crate) mod ids;
pub mod injection;
pub mod one_field;
pub(crate) mod openapi;
#[cfg(test)]
mod openapi_properties;
pub mod overlay;
pub(crate) mod permissions;
pub mod routes;
pub(crate) mod rows;
pub(crate) mod schema;
pub use schema::accepted_types;
pub mod service;
pub(crate) mod similar;
pub mod state;
pub mod tools;

use crate::canon;
use crate::error::InputError;
use folder::Folder;
pub use folder::{check_manifest, check_relative};
pub use permissions::{Access, FILE_PERMISSIONS, Permissions, glob_match, names_a_tool};
use serde::Deserialize;
use serde_json::Value;
use state::{Rows, State, Table};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    /// The simulated user's own tools (`[[user_tools]]`, over the user's
    /// tables, e.g. a phone): never shown to or callable by the agent; a
    /// scripted user's rule calls them. Their names are not the agent's.
    pub user_tools: Vec<Tool>,
    pub permissions: Permissions,
    pub initial: State,
    /// The component implementing its `op = "service"` tools, if any.
    pub service: Option<service::ServiceSource>,
    /// Its own HTTP API (`[[routes]]`, then `[openapi]`'s), answered by its tools.
    pub routes: Vec<routes::Route>,
    /// What `[openapi]`'s document declares that the routes ignore.
    pub openapi_notes: Vec<String>,
    /// For a case's overlaid copy: the base world's hash and the overlay
    /// (`hash` is then the overlaid world's).
    pub overlaid: Option<overlay::Record>,
    /// How its cases' checks, gold comparison and diff compare numbers
    /// (`numbers = "strict"`; a case's `[expect] numbers` overrides it).
    pub numbers: compare::Numbers,
    /// `[injection_vectors]`: placeholders in its data where injected text
    /// lands (`injection.rs`), by name.
    pub injection_vectors: BTreeMap<String, injection::Vector>,
}

impl World {
    /// `name@vN`.
    pub fn reference(&self) -> String {
        format!("{}@v{}", self.name, self.version)
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The user's tool `name` (`[[user_tools]]`).
    pub fn user_tool(&self, name: &str) -> Option<&Tool> {
        self.user_tools.iter().find(|t| t.name == name)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorldToml {
    name: toml::Spanned<String>,
    version: toml::Spanned<u32>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tables: BTreeMap<String, toml::Spanned<TableToml>>,
    #[serde(default)]
    files: Option<toml::Spanned<FilesToml>>,
    #[serde(default)]
    permissions: Permissions,
    #[serde(default)]
    tools: Vec<toml::Spanned<declared::ToolToml>>,
    #[serde(default)]
    user_tools: Vec<toml::Spanned<declared::ToolToml>>,
    #[serde(default)]
    service: Option<toml::Spanned<service::ServiceToml>>,
    #[serde(default)]
    routes: Vec<toml::Spanned<routes::RouteToml>>,
    #[serde(default)]
    openapi: Option<toml::Spanned<openapi::OpenApiToml>>,
    #[serde(default)]
    numbers: compare::Numbers,
    #[serde(default)]
    injection_vectors: BTreeMap<String, injection::Vector>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableToml {
    key: String,
    /// A `.json` file holding an array of rows, or a `.jsonl` file of rows.
    #[serde(default)]
    rows: Option<String>,
    /// The key scheme of inserted rows (`world::ids`).
    #[serde(default)]
    ids: ids::Ids,
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

/// Whether a world's `[service]` component must be there to load it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// It must (a world that will run).
    Required,
    /// It may be missing, not built yet (`worldline check`, which runs
    /// nothing); the world then has no `service`.
    MayBeUnbuilt,
}

/// Load `name@vN` from a `worlds/` folder. `referrer` is the file that named
/// the world (for error messages).
pub fn load(
    worlds_root: &Path,
    reference: &str,
    referrer: &Path,
) -> Result<Arc<World>, InputError> {
    load_with(worlds_root, reference, referrer, Component::Required)
}

/// [`load`], the service component as `component` says.
pub fn load_with(
    worlds_root: &Path,
    reference: &str,
    referrer: &Path,
    component: Component,
) -> Result<Arc<World>, InputError> {
    let (world_dir, expected) = locate(worlds_root, reference, referrer)?;
    load_kept(&world_dir, Some(expected), component).map_err(|mut all| all.swap_remove(0))
}

/// The folder of `name@vN` under `worlds_root`, and its name and version;
/// the error names the versions that do exist.
fn locate<'r>(
    worlds_root: &Path,
    reference: &'r str,
    referrer: &Path,
) -> Result<(PathBuf, (&'r str, u32)), InputError> {
    let (name, version) = parse_reference(reference).ok_or_else(|| {
        InputError::new(
            referrer,
            format!("world `{reference}` is not of the form name@vN, the name of ASCII letters, digits, `-` and `_` (for example incident@v4)"),
        )
    })?;
    let world_dir = worlds_root.join(name).join(format!("v{version}"));
    // Whatever is there under that name: a FIFO or a broken link is
    // refused by its reading, with what it is, not called missing.
    if world_dir.join("world.toml").symlink_metadata().is_ok() {
        return Ok((world_dir, (name, version)));
    }
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
    Err(InputError::new(
        referrer,
        format!(
            "world `{reference}` not found ({} has no world.toml); {hint}",
            world_dir.display()
        ),
    ))
}

/// Check that `name@vN` is there and its `world.toml` is a world file of
/// that name and version, reading nothing else (no rows, no component):
/// what `test --list` needs to list a case.
pub fn check_header(
    worlds_root: &Path,
    reference: &str,
    referrer: &Path,
) -> Result<(), InputError> {
    let (world_dir, expected) = locate(worlds_root, reference, referrer)?;
    let mut folder = Folder::open(&world_dir)?;
    let (source, doc) = parse_toml(&mut folder)?;
    match name_problems(&world_dir.join("world.toml"), &source, &doc, expected)
        .into_iter()
        .next()
    {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Load the world in one folder.
pub fn load_dir(world_dir: &Path) -> Result<Arc<World>, InputError> {
    load_kept(world_dir, None, Component::Required).map_err(|mut all| all.swap_remove(0))
}

/// [`load_checked`], kept for the process ([`cache::load`]).
fn load_kept(
    world_dir: &Path,
    expected: Option<(&str, u32)>,
    component: Component,
) -> Result<Arc<World>, Vec<InputError>> {
    // Read under the rules of what no run can meet, or as a recorded run
    // read it (`new_rules`): two loads, not one kept for both.
    let mode = format!("{component:?} {expected:?} {}", crate::new_rules::apply());
    cache::load(world_dir, &mode, || {
        load_checked(world_dir, expected, component)
    })
}

/// Every problem of the world in one folder (none when it loads), its
/// `[service]` component allowed to be unbuilt; a folder named
/// `worlds/<name>/v<N>/` must hold that name and version. When it loads,
/// the notes of what its `[openapi]` document declares and is ignored.
pub fn problems(world_dir: &Path) -> (Vec<InputError>, Vec<String>) {
    let version = world_dir
        .file_name()
        .and_then(|v| v.to_str()?.strip_prefix('v')?.parse::<u32>().ok());
    let name = world_dir
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str());
    let expected = name.zip(version);
    match load_checked(world_dir, expected, Component::MayBeUnbuilt) {
        Ok(world) => (Vec::new(), world.openapi_notes),
        Err(problems) => (problems, Vec::new()),
    }
}

/// The folder's `world.toml`: its text and what it says.
fn parse_toml(folder: &mut Folder) -> Result<(String, WorldToml), InputError> {
    let source = folder.read_text("world.toml")?;
    crate::toml_tokens::check(&folder.path.join("world.toml"), &source)?;
    let doc = toml::from_str(&source)
        .map_err(|e| InputError::toml(folder.path.join("world.toml"), &source, &e))?;
    Ok((source, doc))
}

/// Where `world.toml`'s name and version disagree with its folder's.
fn name_problems(
    toml_path: &Path,
    source: &str,
    doc: &WorldToml,
    (name, version): (&str, u32),
) -> Vec<InputError> {
    let at = |offset: usize, m: String| InputError::at(toml_path, source, offset, m);
    let mut problems = Vec::new();
    // A name no case can reference (`bücher`, `my lib`) passed the check
    // of its world, and every case naming it was told it was malformed.
    if parse_reference(&format!("{}@v1", doc.name.get_ref())).is_none() {
        problems.push(at(
            doc.name.span().start,
            format!(
                "name `{}`: a world's name is ASCII letters, digits, `-` and `_` (a case names it as name@vN); rename the world and its folder",
                doc.name.get_ref()
            ),
        ));
    } else if doc.name.get_ref() != name {
        problems.push(at(
            doc.name.span().start,
            format!(
                "name `{}` disagrees with the folder, which says `{name}`; name the world after its folder",
                doc.name.get_ref()
            ),
        ));
    }
    if *doc.version.get_ref() != version {
        problems.push(at(
            doc.version.span().start,
            format!(
                "version {} disagrees with the folder, which says v{version}; give the folder's version",
                doc.version.get_ref()
            ),
        ));
    }
    problems
}

/// Load the world in one folder; with `expected`, its `name` and `version`
/// must be the ones its folder (`worlds/<name>/v<N>/`) says, or its runs
/// could not be found again by the reference they record. The error is
/// every problem found, in the order of the file: one when `world.toml`
/// is not valid TOML, else one for each table, tool or section that is
/// wrong.
fn load_checked(
    world_dir: &Path,
    expected: Option<(&str, u32)>,
    component: Component,
) -> Result<World, Vec<InputError>> {
    let toml_path = world_dir.join("world.toml");
    let mut folder = Folder::open(world_dir).map_err(|e| vec![e])?;
    let (source, doc) = parse_toml(&mut folder).map_err(|e| vec![e])?;
    let at = |offset: usize, m: String| InputError::at(&toml_path, &source, offset, m);
    let mut problems = match expected {
        Some(expected) => name_problems(&toml_path, &source, &doc, expected),
        None => Vec::new(),
    };
    let mut initial = State::default();
    for (name, spanned) in &doc.tables {
        match load_table(&mut folder, &source, name, spanned) {
            Ok(table) => {
                initial.tables.insert(name.clone(), table);
            }
            Err(e) => problems.push(e),
        }
    }
    if let Some(files) = &doc.files {
        match folder.read_files(&files.get_ref().dir) {
            Ok(f) => initial.files = f,
            Err(m) => problems.push(at(files.span().start, m)),
        }
    }
    // A tool naming a table that failed to load would only repeat that
    // table's problem.
    let tables_ok = problems.is_empty();
    let tools = load_tools(
        &toml_path,
        &source,
        &doc.tools,
        &initial,
        tables_ok,
        &mut problems,
    );
    let user_tools = load_tools(
        &toml_path,
        &source,
        &doc.user_tools,
        &initial,
        tables_ok,
        &mut problems,
    );
    for (t, spanned) in user_tools.iter().zip(&doc.user_tools) {
        if tools.iter().any(|a| a.name == t.name) {
            problems.push(at(
                spanned.span().start,
                format!(
                    "user tool `{}` has the name of an agent tool; give the user's tool another name",
                    t.name
                ),
            ));
        }
    }
    let all_tools: Vec<Tool> = tools.iter().chain(&user_tools).cloned().collect();
    // A tool refused above may be the service's: none found then is no
    // problem of the [service]'s (it was said to be, beside the tool's).
    let every_tool = all_tools.len() == doc.tools.len() + doc.user_tools.len();
    let service = load_service(
        &mut folder,
        &source,
        doc.service.as_ref(),
        (&all_tools, every_tool),
        component,
    )
    .unwrap_or_else(|e| {
        problems.push(e);
        None
    });
    let mut routes: Vec<routes::Route> = Vec::new();
    for r in &doc.routes {
        match routes::resolve(r.get_ref(), &tools) {
            Ok(route) => {
                let never = (routes.iter())
                    .find_map(|earlier| routes::shadowed(earlier, &route))
                    .filter(|_| crate::new_rules::apply());
                match never {
                    Some(m) => problems.push(at(r.span().start, m)),
                    None => routes.push(route),
                }
            }
            // A route to a tool left out with a table that did not load
            // would only repeat that table's problem.
            Err(m) if tables_ok => problems.push(at(r.span().start, m)),
            Err(_) => {}
        }
    }
    let mut openapi_notes = Vec::new();
    if let Some(spanned) = &doc.openapi {
        match openapi::check_decl(spanned.get_ref(), &tools) {
            Err(m) => problems.push(at(spanned.span().start, m)),
            Ok(()) => match load_openapi(&mut folder, spanned.get_ref(), &tools) {
                Ok(imported) => {
                    // An operation a route before it answers every URL of
                    // (a `[[routes]]` entry, or another operation) is
                    // never reached, as in `[[routes]]`.
                    for route in imported.routes {
                        let never = (routes.iter())
                            .find_map(|earlier| routes::shadowed(earlier, &route))
                            .filter(|_| crate::new_rules::apply());
                        match never {
                            Some(m) => problems.push(at(
                                spanned.span().start,
                                format!("[openapi] file `{}`: {m}", spanned.get_ref().file),
                            )),
                            None => routes.push(route),
                        }
                    }
                    openapi_notes = imported.notes;
                }
                Err(e) => problems.push(e),
            },
        }
    }
    if let Some(rule) = (doc.permissions.rule_naming_nothing(&tools)).filter(|_| tables_ok) {
        problems.push(at(
            source.find("[permissions]").unwrap_or(0),
            format!("[permissions] rule `{rule}` names no tool of this world"),
        ));
    }
    if doc.name.get_ref().is_empty() {
        problems.push(at(doc.name.span().start, "`name` is empty".into()));
    }
    for name in doc.injection_vectors.keys() {
        if let Err(m) = injection::check_name(name) {
            problems.push(at(source.find("[injection_vectors]").unwrap_or(0), m));
        }
    }
    if !problems.is_empty() {
        problems.sort_by_key(|e| (e.file != toml_path, e.line));
        return Err(problems);
    }
    Ok(World {
        name: doc.name.into_inner(),
        version: doc.version.into_inner(),
        description: doc.description,
        dir: world_dir.to_path_buf(),
        hash: canon::hash_json(&folder.manifest),
        manifest: folder.manifest,
        tools,
        user_tools,
        permissions: doc.permissions,
        initial,
        service,
        routes,
        openapi_notes,
        overlaid: None,
        numbers: doc.numbers,
        injection_vectors: doc.injection_vectors,
    })
}

/// The routes of `[openapi]`'s document (read into the manifest, so the
/// world's hash covers it); the error names the document (and the line,
/// when it does not parse).
fn load_openapi(
    folder: &mut Folder,
    decl: &openapi::OpenApiToml,
    tools: &[Tool],
) -> Result<openapi::Imported, InputError> {
    let file = folder.path.join(&decl.file);
    let text = folder.read_text(&decl.file)?;
    let doc = openapi::parse(&decl.file, &text)
        .map_err(|u| InputError::new(&file, u.message).with_line(u.line))?;
    openapi::import(&doc, decl, tools).map_err(|m| InputError::new(&file, m))
}

/// The `[service]` component's bytes, when the world has service tools;
/// service tools without `[service]` (or the reverse, when `every_tool`
/// declared loaded) are refused.
fn load_service(
    folder: &mut Folder,
    source: &str,
    declared: Option<&toml::Spanned<service::ServiceToml>>,
    (tools, every_tool): (&[Tool], bool),
    component: Component,
) -> Result<Option<service::ServiceSource>, InputError> {
    let toml_path = folder.path.join("world.toml");
    let first_service_tool = tools.iter().find(|t| matches!(t.op, Op::Service));
    match (declared, first_service_tool) {
        (None, None) => Ok(None),
        (Some(_), None) if !every_tool => Ok(None),
        (None, Some(tool)) => Err(InputError::new(
            &toml_path,
            format!(
                "tool `{}` has op = \"service\" but the world has no [service]; add [service] component = \"<file>.wasm\"",
                tool.name
            ),
        )),
        (Some(spanned), None) => Err(InputError::at(
            &toml_path,
            source,
            spanned.span().start,
            "[service] is declared but no tool has op = \"service\"",
        )),
        (Some(spanned), Some(_)) => {
            let t = spanned.get_ref();
            if let Some(m) = t.out_of_range().filter(|_| crate::new_rules::apply()) {
                return Err(InputError::at(&toml_path, source, spanned.span().start, m));
            }
            // Not there in any form (a looping or dangling link is there,
            // and its reading says what it is: it was "not built yet").
            let dir = folder.path;
            let there = |rel: &str| dir.join(rel).symlink_metadata().is_ok();
            if component == Component::MayBeUnbuilt
                && check_relative(&t.component).is_ok()
                && !there(&t.component)
            {
                return Ok(None);
            }
            let bytes = folder
                .read_bytes(&t.component, crate::bounded::COMPONENT)
                .map_err(|e| {
                    // Not there at all: not built yet, which is what to do
                    // (a path out of the folder is refused as that first).
                    let unbuilt = check_relative(&t.component).is_ok() && !there(&t.component);
                    let why = match unbuilt {
                        true => "not built yet: build it before a run (a Python service with `worldline build-python --service SRC.py -o` this file; a Rust one with `cargo build --release --target wasm32-wasip2 -p PACKAGE`, its `.wasm` copied to this file; a project's with its build script)".to_string(),
                        false => e.message,
                    };
                    InputError::at(
                        &toml_path,
                        source,
                        spanned.span().start,
                        format!("[service] component `{}`: {why}", t.component),
                    )
                })?;
            Ok(Some(t.resolve(folder.path.join(&t.component), bytes)))
        }
    }
}

/// A table and its rows. A rows file that cannot be read (or is of no
/// known kind) is reported at the table's place in `world.toml`; a bad
/// line inside it, at its own line.
fn load_table(
    folder: &mut Folder,
    source: &str,
    name: &str,
    spanned: &toml::Spanned<TableToml>,
) -> Result<Table, InputError> {
    let t = spanned.get_ref();
    let mut rows = Rows::new();
    if let Some(rel) = &t.rows {
        let toml_path = folder.path.join("world.toml");
        let placed = |e: InputError| match e.line {
            Some(_) => e,
            None => InputError::at(
                &toml_path,
                source,
                spanned.span().start,
                format!("table `{name}`: rows `{rel}`: {}", e.message),
            ),
        };
        let text = folder.read_text(rel).map_err(placed)?;
        let file = folder.path.join(rel);
        for (line, row) in rows::parse_rows(&file, rel, &text).map_err(placed)? {
            let at_line = |m: String| InputError::new(&file, m).with_line(line);
            let key = match row.get(&t.key) {
                Some(k) if !k.is_null() => row_key(k).map_err(|why| {
                    at_line(format!("table `{name}`: key field `{}` {why}", t.key))
                })?,
                _ => {
                    return Err(at_line(format!(
                        "row has no key field `{}` (table `{name}`)",
                        t.key
                    )));
                }
            };
            if rows.insert(key.clone(), row).is_some() {
                return Err(at_line(format!("duplicate key `{key}` in table `{name}`")));
            }
        }
    }
    Ok(Table {
        key: t.key.clone(),
        rows,
        ids: t.ids.clone(),
    })
}

/// A row's key as the world holds it ([`canon::key_of`]), or why it
/// cannot be one: a key is text or a whole number, as the tools' and the
/// checks' arguments name a row. A float, a boolean, an array or a table
/// was taken as its JSON text (`1.0` and `1` two rows, `[1, 2]` a row no
/// check could name); refused under decision 0412's rules, so that a
/// world a run recorded reads as it was written.
pub(crate) fn row_key(value: &Value) -> Result<String, String> {
    let kind = match value {
        Value::String(_) => None,
        Value::Number(n) if n.is_i64() || n.is_u64() => None,
        Value::Number(_) => Some("a number with a fraction or exponent"),
        Value::Bool(_) => Some("true or false"),
        Value::Array(_) => Some("an array"),
        Value::Object(_) => Some("a table"),
        Value::Null => Some("null"),
    };
    match kind.filter(|_| crate::new_rules::apply()) {
        None => Ok(canon::key_of(value)),
        Some(kind) => Err(format!(
            "is {kind} ({}): a row's key is text or a whole number; write it as one",
            canon::key_of(value)
        )),
    }
}

/// The declared tools in order, each checked against the tables (when
/// they loaded); a tool that is wrong is a problem and left out.
fn load_tools(
    toml_path: &Path,
    source: &str,
    declared: &[toml::Spanned<declared::ToolToml>],
    initial: &State,
    tables_ok: bool,
    problems: &mut Vec<InputError>,
) -> Vec<Tool> {
    let mut list: Vec<Tool> = Vec::with_capacity(declared.len());
    for spanned in declared {
        let at = |m: String| InputError::at(toml_path, source, spanned.span().start, m);
        match declared::resolve(spanned.get_ref(), initial) {
            Ok(tool) if list.iter().any(|t| t.name == tool.name) => {
                problems.push(at(format!("tool `{}` is declared twice", tool.name)));
            }
            Ok(tool) => list.push(tool),
            Err(m) if tables_ok => problems.push(at(m)),
            Err(_) => {}
        }
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse() {
        assert_eq!(parse_reference("incident@v4"), Some(("incident", 4)));
        assert_eq!(parse_reference("incident"), None);
        assert_eq!(parse_reference("../x@v1"), None);
    }

    /// A world named so that no case can reference it is refused at its
    /// `name` (it passed `check`, and each case naming it was refused).
    #[test]
    fn a_name_no_case_can_reference_is_refused_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["bücher", "my lib", "My.Lib"] {
            let folder = dir.path().join(name).join("v1");
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(
                folder.join("world.toml"),
                format!("version = 1\nname = \"{name}\"\n[tables.t]\nkey = \"id\"\n"),
            )
            .unwrap();
            let (all, _) = problems(&folder);
            assert_eq!(all.len(), 1, "{all:?}");
            assert_eq!(all[0].line, Some((2, 8)), "{}", all[0]);
            assert!(
                all[0].message.contains("ASCII letters, digits"),
                "{}",
                all[0]
            );
        }
    }

    /// A `[files] dir` that is a link out of the world's folder is said
    /// to be one, with what to do.
    #[test]
    fn a_files_dir_linked_out_of_the_world_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("w").join("v1");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("world.toml"),
            "name = \"w\"\nversion = 1\n[files]\ndir = \"files\"\n",
        )
        .unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, folder.join("files")).unwrap();
        let (all, _) = problems(&folder);
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(
            all[0]
                .message
                .contains("resolves outside the world's folder (a symlink out?)"),
            "{}",
            all[0]
        );
    }

    /// A service component that is a looping link is said to be one, not
    /// "not built yet" (which `check` took as a note, exit 0).
    #[test]
    fn a_service_that_is_a_looping_link_is_no_unbuilt_one() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("w").join("v1");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("world.toml"),
            "name = \"w\"\nversion = 1\n[service]\ncomponent = \"service.wasm\"\n\n[[tools]]\nname = \"s\"\nop = \"service\"\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("service.wasm", folder.join("service.wasm")).unwrap();
        let (all, _) = problems(&folder);
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(!all[0].message.contains("not built yet"), "{}", all[0]);
        assert!(all[0].message.contains("[service] component"), "{}", all[0]);
    }

    /// A world file whose name is not UTF-8 is said to be one, not "No
    /// such file or directory".
    #[test]
    fn a_world_file_not_named_in_utf8_is_said_so() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("w").join("v1");
        std::fs::create_dir_all(folder.join("files")).unwrap();
        std::fs::write(
            folder.join("world.toml"),
            "name = \"w\"\nversion = 1\n[files]\ndir = \"files\"\n",
        )
        .unwrap();
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        std::fs::write(folder.join("files").join(name), "hi").unwrap();
        let (all, _) = problems(&folder);
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(
            all[0].message.contains("is not named in UTF-8"),
            "{}",
            all[0]
        );
    }

    #[test]
    fn a_tool_mistake_names_the_line_of_that_tool() {
        let dir = tempfile::tempdir().unwrap();
        let world = "name = \"w\"\nversion = 1\n[tables.t]\nkey = \"id\"\n\n\
            [[tools]]\nname = \"g\"\nop = \"get\"\ntable = \"t\"\n\n\
            [[tools]]\nname = \"u\"\nop = \"update\"\ntable = \"t\"\n";
        std::fs::write(dir.path().join("world.toml"), world).unwrap();
        let err = load_dir(dir.path()).unwrap_err();
        assert_eq!(err.line, Some((11, 1)), "{err}");
        assert_eq!(err.message, "tool `u`: op `update` needs `set`");
    }

    #[test]
    fn a_row_key_that_is_not_text_nor_a_whole_number_is_refused_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let world = "name = \"w\"\nversion = 1\n\n[tables.t]\nkey = \"id\"\nrows = \"t.jsonl\"\n";
        std::fs::write(dir.path().join("world.toml"), world).unwrap();
        for (key, kind) in [
            ("1.5", "a number with a fraction or exponent"),
            ("true", "true or false"),
            ("[1, 2]", "an array"),
            ("{\"a\": 1}", "a table"),
        ] {
            let rows = format!("{{\"id\": \"a\"}}\n{{\"id\": {key}}}\n");
            std::fs::write(dir.path().join("t.jsonl"), rows).unwrap();
            let err = load_dir(dir.path()).unwrap_err();
            assert_eq!(err.line.map(|l| l.0), Some(2), "{err}");
            assert!(
                err.message
                    .starts_with(&format!("table `t`: key field `id` is {kind} (")),
                "{err}"
            );
        }
        // Text and whole numbers are keys; a world a run recorded reads
        // as it was written.
        std::fs::write(dir.path().join("t.jsonl"), "{\"id\": \"a\"}\n{\"id\": 7}\n").unwrap();
        assert!(load_dir(dir.path()).is_ok());
        std::fs::write(dir.path().join("t.jsonl"), "{\"id\": 1.5}\n").unwrap();
        let _recorded = crate::new_rules::Reading::start();
        assert!(load_dir(dir.path()).is_ok());
    }

    #[test]
    fn a_duplicate_key_in_a_json_rows_file_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let world = "name = \"w\"\nversion = 1\n\n[tables.t]\nkey = \"id\"\nrows = \"t.json\"\n";
        std::fs::write(dir.path().join("world.toml"), world).unwrap();
        let rows = "[\n  {\"id\": 1},\n  {\"id\": 2},\n  {\"id\": 1}\n]\n";
        std::fs::write(dir.path().join("t.json"), rows).unwrap();
        let err = load_dir(dir.path()).unwrap_err();
        assert_eq!(err.line.map(|l| l.0), Some(4), "{err}");
        assert_eq!(err.message, "duplicate key `1` in table `t`");
    }

    /// The service's only tool refused (a schema keyword not supported,
    /// or its name taken) is the problem told, not a `[service]` "no tool
    /// has op = service" that follows from it (it came first, and alone
    /// from a run).
    #[test]
    fn a_refused_service_tool_is_told_not_the_service_without_tools() {
        let dir = tempfile::tempdir().unwrap();
        let head = "name = \"w\"\nversion = 1\n[service]\ncomponent = \"s.wasm\"\n\
            [tables.t]\nkey = \"id\"\n\
            [[tools]]\nname = \"g\"\nop = \"get\"\ntable = \"t\"\n";
        for (tool, said) in [
            (
                "[[tools]]\nname = \"s\"\nop = \"service\"\nparams = { type = \"string\", pattern = \"x\" }\n",
                "unsupported JSON Schema keyword",
            ),
            (
                "[[tools]]\nname = \"g\"\nop = \"service\"\n",
                "tool `g` is declared twice",
            ),
        ] {
            std::fs::write(dir.path().join("world.toml"), format!("{head}{tool}")).unwrap();
            let (all, _) = problems(dir.path());
            assert_eq!(all.len(), 1, "{all:?}");
            assert!(all[0].message.contains(said), "{all:?}");
            assert!(load_dir(dir.path()).unwrap_err().message.contains(said));
        }
    }

    /// A row that writes a field twice is refused at its line, naming the
    /// field (the last was kept without a word), but not in the world of
    /// a run recorded before the rule, which replays as it ran.
    #[test]
    fn a_row_that_writes_a_field_twice_is_refused_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let world = "name = \"w\"\nversion = 1\n[tables.t]\nkey = \"id\"\nrows = \"t.jsonl\"\n";
        std::fs::write(dir.path().join("world.toml"), world).unwrap();
        let rows = "{\"id\": \"T-1\"}\n{\"id\": \"T-9\", \"id\": \"T-10\"}\n";
        std::fs::write(dir.path().join("t.jsonl"), rows).unwrap();
        let err = load_dir(dir.path()).unwrap_err();
        assert_eq!(err.line.map(|l| l.0), Some(2), "{err}");
        assert!(
            err.message.starts_with("the field `id` is written twice"),
            "{err}"
        );
        // Settled, so that a load is kept for the process (`cache`).
        std::thread::sleep(crate::file_identity::SETTLED_FINE * 2);
        {
            let _recorded = crate::new_rules::Reading::start();
            let w = load_dir(dir.path()).unwrap();
            assert!(w.initial.tables["t"].rows.contains_key("T-10"));
        }
        // Not kept for the next load under the rule.
        assert!(load_dir(dir.path()).is_err());
    }

    /// A rows file that does not load is the problem a case's run is told,
    /// not what follows from it (its tools left out, a permission or a
    /// route naming one of them then named "no tool of this world").
    #[test]
    fn a_broken_rows_file_is_told_not_its_follow_ons() {
        let dir = tempfile::tempdir().unwrap();
        let world = "name = \"w\"\nversion = 1\n[tables.t]\nkey = \"id\"\nrows = \"t.jsonl\"\n\
            [permissions]\ndeny = [\"g\"]\n\
            [[routes]]\nmethod = \"GET\"\nurl = \"http://w.internal/t/{id}\"\ntool = \"g\"\n\
            [[tools]]\nname = \"g\"\nop = \"get\"\ntable = \"t\"\n";
        std::fs::write(dir.path().join("world.toml"), world).unwrap();
        std::fs::write(
            dir.path().join("t.jsonl"),
            "{\"id\": 7}\n{\"status\": \"open\"}\n",
        )
        .unwrap();
        let (all, _) = problems(dir.path());
        let said: Vec<&str> = all.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(said, ["row has no key field `id` (table `t`)"]);
        assert_eq!(load_dir(dir.path()).unwrap_err().message, said[0]);
    }
}
