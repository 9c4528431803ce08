//! Cases: one TOML file that pins everything an agent sees — the world
//! version, the task, the clock, the seed, limits, environment, permissions,
//! the model script, injected responses and the expectations.

pub mod approve;
pub mod conditions;
pub mod discover;
pub mod expect;
pub mod expect_conversation;
pub mod fuzz;
pub mod gold;
pub mod inject;
pub mod limits;
pub mod model;
pub mod origin;
mod recorded;
pub mod user;

use crate::canon;
use crate::error::InputError;
use crate::time;
use crate::world::{self, Permissions, World};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use limits::Limits;

/// A case's task: the JSON the agent is given, held as its canonical
/// text (keys sorted, as [`crate::canon`] writes it), not as a parsed
/// tree: a task of 200 calls is ~12 KB of text and ~250 KB of tree, and a
/// suite holds every case at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task(String);

impl Task {
    /// The JSON text the agent is given.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The task parsed.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.0).expect("a task is JSON")
    }
}

/// A loaded case with its world.
#[derive(Debug, Clone)]
pub struct Case {
    pub path: PathBuf,
    /// SHA-256 of the case file's bytes.
    pub hash: String,
    /// The case file's text, as hashed (kept in the store with each run).
    pub source: String,
    pub name: String,
    pub description: String,
    /// `tags = [...]`: labels `test --filter tag:T` selects by.
    pub tags: Vec<String>,
    /// Shared, so a fuzz campaign's many runs of one case copy no world.
    pub world: Arc<World>,
    pub task: Task,
    pub seed: u64,
    /// Virtual wall-clock start, nanoseconds since the Unix epoch.
    pub clock_ns: i128,
    pub limits: Limits,
    pub env: Env,
    /// `exec` and `pass_env`: the native agent this case runs with when
    /// the command line names none (it wins over the project's).
    pub exec: crate::native_agent::ExecSetting,
    pub permissions: Permissions,
    /// `[model]`, with any command-line overrides applied.
    pub model: model::ModelConfig,
    /// `--model-set KEY=VALUE` overrides (recorded in the bundle header).
    pub model_overrides: BTreeMap<String, String>,
    /// `--user-model-set KEY=VALUE` overrides of a model-played user's
    /// `[user.model]`, as applied (recorded in the bundle header; a replay
    /// applies them again, so its user is played by the same side).
    pub user_model_overrides: BTreeMap<String, String>,
    /// Limits raised by `resume --fuel/--max-steps/--max-events/--max-errors`
    /// (recorded in the bundle header, applied again by a replay).
    pub limit_overrides: BTreeMap<String, u64>,
    /// `[[inject]]` rules in order, each with its checked action.
    pub inject: Vec<(inject::Inject, inject::Action)>,
    pub expect: Option<expect::Expect>,
    /// `[fuzz]`: the fault profile `worldline fuzz` draws from.
    pub fuzz: Option<fuzz::Profile>,
    /// `[user]`: who plays the user the agent talks to.
    pub user: Option<user::UserConfig>,
    /// `[[approve]]` rules in order.
    pub approve: Vec<approve::ApproveRule>,
    /// `[origin]`: the run the case was made from.
    pub origin: Option<origin::Origin>,
    /// `[prices]`: what its model calls cost (shown, never recorded).
    pub prices: crate::prices::Prices,
}

/// What `wasi:cli/environment` answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Env {
    pub vars: BTreeMap<String, String>,
    pub args: Vec<String>,
}

impl Env {
    /// What no process environment can hold (a native agent gets these
    /// as its own): a NUL byte anywhere, `=` or nothing as a name.
    fn check(&self) -> Result<(), String> {
        for (name, value) in &self.vars {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(format!(
                    "[env] vars: `{}` cannot name an environment variable (empty, or with `=` or a NUL byte)",
                    name.escape_debug()
                ));
            }
            if value.contains('\0') {
                return Err(format!("[env] vars.{name} contains a NUL byte"));
            }
        }
        match self.args.iter().position(|a| a.contains('\0')) {
            Some(i) => Err(format!("[env] args #{} contains a NUL byte", i + 1)),
            None => Ok(()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseToml {
    world: toml::Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: Vec<String>,
    /// Read straight into JSON, as the agent gets it (the same JSON as the
    /// TOML value turned into it; test
    /// `a_task_read_as_json_is_its_toml_turned_into_json`).
    task: Value,
    #[serde(default)]
    seed: Seed,
    clock: toml::Spanned<toml::value::Datetime>,
    #[serde(default)]
    limits: limits::LimitsToml,
    env: Option<toml::Spanned<Env>>,
    exec: Option<toml::Spanned<Vec<String>>>,
    pass_env: Option<toml::Spanned<Vec<String>>>,
    #[serde(default)]
    permissions: Option<toml::Spanned<Permissions>>,
    #[serde(default)]
    model: Option<toml::Spanned<model::ModelConfig>>,
    #[serde(default)]
    inject: Vec<toml::Spanned<inject::Inject>>,
    #[serde(default)]
    expect: Option<toml::Spanned<expect::Expect>>,
    #[serde(default)]
    fuzz: Option<toml::Spanned<fuzz::ProfileToml>>,
    #[serde(default)]
    overlay: Vec<toml::Spanned<world::overlay::Overlay>>,
    user: Option<toml::Spanned<user::UserConfig>>,
    #[serde(default)]
    approve: Vec<toml::Spanned<approve::ApproveRule>>,
    #[serde(default)]
    origin: Option<origin::Origin>,
    prices: Option<toml::Spanned<crate::prices::Prices>>,
}

/// `seed`: an integer, or (past TOML's largest integer, 2^63 - 1) its
/// decimal digits as a string, as `case from-run` writes a fuzz run's seed.
#[derive(Default)]
struct Seed(u64);

impl<'de> Deserialize<'de> for Seed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(u64),
            Text(String),
        }
        match Either::deserialize(d) {
            Ok(Either::Number(n)) => Ok(Seed(n)),
            Ok(Either::Text(t)) => t.parse().map(Seed).map_err(|_| {
                serde::de::Error::custom(format!(
                    "seed \"{t}\" is not a whole number from 0 to 18446744073709551615"
                ))
            }),
            // Negative, fractional, past 64 bits, or not a number: the
            // range said whole (it gave no upper end).
            Err(_) => Err(serde::de::Error::custom(
                "seed must be a whole number from 0 to 18446744073709551615 (past 9223372036854775807, the largest TOML integer, it may be written as its digits in a string)",
            )),
        }
    }
}

/// `source` with its seed's value written `0`: a seed past 2^63 − 1, which
/// a case may give as a bare integer (it is read as any seed is), is no
/// value of a TOML table, which a reader of the whole file
/// (`case from-run`) parses it into.
pub fn without_seed(source: &str) -> std::borrow::Cow<'_, str> {
    #[derive(Deserialize)]
    struct Top {
        seed: Option<toml::Spanned<serde::de::IgnoredAny>>,
    }
    match toml::from_str::<Top>(source) {
        Ok(Top { seed: Some(seed) }) => {
            let at = seed.span();
            format!("{}0{}", &source[..at.start], &source[at.end..]).into()
        }
        _ => source.into(),
    }
}

/// An integer other than the seed past 2^63 − 1 (a limit, a count): the
/// fields read it, but TOML's integers end there, so no TOML table holds
/// the case and `case from-run` could not write a case of its runs. The
/// file is parsed as a table only when it has a run of 16 or more digits
/// (or hex digits and `_`), which any such integer needs. A recorded case
/// is spared (decision 0412's rule for what came after a run).
fn integer_past_toml(path: &Path, text: &str) -> Option<InputError> {
    let long_run = text
        .split(|c: char| !(c.is_ascii_hexdigit() || c == '_'))
        .any(|run| run.len() >= 16);
    if !long_run || !recorded::new_rules_apply() {
        return None;
    }
    let source = without_seed(text);
    let e = toml::from_str::<toml::Table>(&source).err()?;
    if !is_integer_past_toml(&e) {
        return None;
    }
    // The seed's line alone changed: the line numbers are the file's.
    let at = e.span().map_or(0, |s| s.start);
    Some(InputError::at(
        path,
        &source,
        at,
        format!(
            "this integer is past {}, the largest a TOML integer holds; give at most that (only `seed` may be larger, written as its digits in a string)",
            i64::MAX
        ),
    ))
}

/// A value no JSON holds where the case gives JSON to the agent, the
/// world or a check (the task, an overlay's rows, gold arguments, check
/// values): a TOML date or time, which reached them as
/// `{"$__toml_private_datetime": …}` (a check of one could never pass),
/// and `nan` or an infinity, which became `null`. `clock` is the one key a
/// date belongs to. Found where it starts; a recorded case is spared
/// (decision 0412's rule for what came after a run).
fn json_cannot_hold(path: &Path, text: &str) -> Option<InputError> {
    use toml::de::{DeTable, DeValue};
    // `floats`: whether to look at floats (a check's bounds have their own
    // rule for `nan`, decision 0412, and so have prices and limits).
    fn first(v: &toml::Spanned<DeValue<'_>>, floats: bool) -> Option<(usize, &'static str)> {
        match v.get_ref() {
            DeValue::Datetime(_) => Some((
                v.span().start,
                "a TOML date or time is no JSON value, and this one would reach the agent, the world or a check as `{\"$__toml_private_datetime\": …}`: write it as a string (\"2026-04-01\", \"2026-03-01T12:00:00Z\")",
            )),
            DeValue::Float(f)
                if floats && (f.as_str().contains("nan") || f.as_str().contains("inf")) =>
            {
                Some((
                    v.span().start,
                    "`nan` and the infinities are no JSON number (this one would be `null`): give a finite number, or a string",
                ))
            }
            DeValue::Array(a) => a.iter().find_map(|x| first(x, floats)),
            DeValue::Table(t) => t.values().find_map(|x| first(x, floats)),
            _ => None,
        }
    }
    // The `[expect]` section: its checks' numeric bounds and weights have
    // their own rule for `nan` and the infinities (decision 0412); every
    // other value in it — what a check compares with (`equals`,
    // `contains`, `key`, `where`), a call's `args` or `result`, the judge's
    // `[model]` — is JSON, where one became `null` and a check against a
    // null field passed. A key named `min` inside those is JSON too.
    fn first_in_expect(v: &toml::Spanned<DeValue<'_>>) -> Option<(usize, &'static str)> {
        match v.get_ref() {
            DeValue::Array(a) => a.iter().find_map(first_in_expect),
            DeValue::Table(t) => t.iter().find_map(|(key, x)| match key.get_ref().as_ref() {
                "min" | "max" | "weight" => first(x, false),
                "equals" | "contains" | "key" | "where" | "args" | "result" | "judge_model" => {
                    first(x, true)
                }
                _ => first_in_expect(x),
            }),
            _ => first(v, true),
        }
    }
    // Parsed again only when it may hold one: an unquoted date besides the
    // clock's, or the letters of `nan` or `inf` (a case's words often have
    // them; its dates are rarely unquoted).
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let dates = (0..b.len().saturating_sub(9))
        .filter(|&i| {
            digits(i..i + 4)
                && b[i + 4] == b'-'
                && digits(i + 5..i + 7)
                && b[i + 7] == b'-'
                && digits(i + 8..i + 10)
                && (i == 0 || !matches!(b[i - 1], b'"' | b'\'' | b'0'..=b'9'))
        })
        .count();
    let may = dates > 1 || text.contains("nan") || text.contains("inf");
    if !may || !recorded::new_rules_apply() {
        return None;
    }
    let doc: DeTable<'_> = DeTable::parse(text).ok()?.into_inner();
    let (at, message) = doc
        .iter()
        .filter(|(key, _)| key.get_ref().as_ref() != "clock")
        // Sections whose numbers are read as numbers, with a rule of their
        // own for `nan` and the infinities: said once, by it (in `expect`,
        // only its checks' bounds and weights).
        .find_map(|(key, value)| match key.get_ref().as_ref() {
            "expect" => first_in_expect(value),
            "prices" | "limits" => first(value, false),
            _ => first(value, true),
        })?;
    Some(InputError::at(path, text, at, message))
}

/// Whether TOML's parser refused `e` for an integer past 2^63 − 1 (its
/// message is the only sign of it).
pub fn is_integer_past_toml(e: &toml::de::Error) -> bool {
    e.message().contains("too large")
}

/// Load a case, and the world it names from `worlds_root` (or from the
/// nearest `worlds/` folder above the case file when `None`).
pub fn load(path: &Path, worlds_root: Option<&Path>) -> Result<Case, InputError> {
    let bytes = crate::bounded::read(path, crate::bounded::DOCUMENT)
        .map_err(|e| InputError::new(path, format!("cannot read case: {e}")))?;
    let root = match worlds_root {
        Some(r) => Some(r.to_path_buf()),
        None => find_worlds_root(path),
    };
    parse(path, bytes, |reference| {
        let root = root.as_ref().ok_or_else(|| {
            InputError::new(
                path,
                "no `worlds/` folder found above the case; pass --worlds DIR",
            )
        })?;
        world::load(root, reference, path)
    })
}

/// What `test --list` shows of a case, read without loading its world.
#[derive(Debug, Clone)]
pub struct Header {
    /// The world it names (`name@vN`).
    pub world: String,
    pub tags: Vec<String>,
}

/// A case's [`Header`]: the case file is read and checked as TOML of a
/// case (every key known, every type right), and the world it names must
/// have a `world.toml` of that name and version; no rows, no service and
/// nothing that needs them is read or checked (a full load does that).
pub fn header(path: &Path, worlds_root: Option<&Path>) -> Result<Header, InputError> {
    let bytes = crate::bounded::read(path, crate::bounded::DOCUMENT)
        .map_err(|e| InputError::new(path, format!("cannot read case: {e}")))?;
    let text = InputError::utf8(path, bytes)?;
    crate::toml_tokens::check(path, &text)?;
    let doc: CaseToml = toml::from_str(&text).map_err(|e| InputError::toml(path, &text, &e))?;
    let root = match worlds_root {
        Some(r) => r.to_path_buf(),
        None => find_worlds_root(path).ok_or_else(|| {
            InputError::new(
                path,
                "no `worlds/` folder found above the case; pass --worlds DIR",
            )
        })?,
    };
    let reference = doc.world.get_ref();
    world::check_header(&root, reference, path).map_err(|e| {
        if e.file == path && e.line.is_none() {
            InputError::at(path, &text, doc.world.span().start, e.message)
        } else {
            e
        }
    })?;
    Ok(Header {
        world: reference.clone(),
        tags: doc.tags,
    })
}

/// Parse a case from its bytes; `resolve` finds the world it names (from a
/// `worlds/` folder, or from a store's snapshot of the recorded world).
/// The error is the first problem (see [`parse_all`]).
pub fn parse(
    path: &Path,
    bytes: Vec<u8>,
    resolve: impl FnOnce(&str) -> Result<Arc<World>, InputError>,
) -> Result<Case, InputError> {
    parse_all(path, bytes, resolve).map_err(|mut all| all.swap_remove(0))
}

/// [`parse`] of a case a run recorded, read again to replay, verify, fork
/// or resume that run: the rules that refuse what no run can meet
/// (decision 0412) were made after runs were recorded, and a run recorded
/// before them replays as it ran (an old bundle keeps replaying
/// `identical`). Every other rule applies as in [`parse`].
pub fn parse_recorded(
    path: &Path,
    bytes: Vec<u8>,
    resolve: impl FnOnce(&str) -> Result<Arc<World>, InputError>,
) -> Result<Case, InputError> {
    let _recorded = recorded::Reading::start();
    parse(path, bytes, resolve)
}

/// `load` run as it would run inside [`parse_recorded`]: the world a
/// recorded case names, loaded on a thread of its own, is spared the rules
/// its case is (decision 0412).
pub fn as_recorded<T>(load: impl FnOnce() -> T) -> T {
    let _recorded = recorded::Reading::start();
    load()
}

/// The keys a case cannot be read without: a problem with one of them
/// ends the reading ([`crate::sections::read`], which reads a section of
/// the wrong type as a problem and the rest without it).
const REQUIRED: [&str; 3] = ["world", "task", "clock"];

/// What a file named as a case is instead, when it is one of the other
/// files worldline reads (it has no `world`): the project file, a fault
/// profile, a world's `world.toml`. `run worldline.toml` said "unknown
/// field `agent`", as if the case had a typo.
fn another_kind(path: &Path, text: &str) -> Option<&'static str> {
    let doc: toml::Table = toml::from_str(text).ok()?;
    if doc.contains_key("world") {
        return None;
    }
    let keys: discover::Keys = toml::from_str(text).ok()?;
    let file = path.file_name().and_then(|n| n.to_str());
    if file == Some(crate::project::FILE) {
        Some(
            "is the project file, not a case: name case files (or a folder of them), or run `worldline test` to run the project's `cases`",
        )
    } else if doc.contains_key("name") && doc.contains_key("version") {
        Some(
            "is a world (its `world.toml`), not a case: a case names its world with `world = \"name@vN\"`",
        )
    } else if keys.is_profile() {
        Some("is a fault profile, not a case: give it to `worldline fuzz CASE --faults FILE`")
    } else {
        None
    }
}

/// Where a `[model]` entry starts in the case's `text` (its table's
/// header, or an inline list's entry).
pub(crate) fn model_entry_offset(text: &str, entry: model::Entry) -> Option<usize> {
    match entry {
        model::Entry::Rule(i) => list_entry_offset(text, "model", "rules", i),
        model::Entry::Response(i) => list_entry_offset(text, "model", "responses", i),
        model::Entry::Table => None,
    }
}

/// Where the `i`-th (from 0) entry of the list `table.list` starts in the
/// case's `text` (`[[model.rules]]`'s header, or an inline list's entry).
fn list_entry_offset(text: &str, table: &str, list: &str, i: usize) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    fn field<'t, 'i>(t: &'t DeTable<'i>, name: &str) -> Option<&'t DeValue<'i>> {
        (t.iter().find(|(k, _)| k.get_ref() == name)).map(|(_, v)| v.get_ref())
    }
    let doc = DeTable::parse(text).ok()?.into_inner();
    let Some(DeValue::Table(t)) = field(&doc, table) else {
        return None;
    };
    let Some(DeValue::Array(entries)) = field(t, list) else {
        return None;
    };
    Some(entries.get(i)?.span().start)
}

/// [`parse`], with every problem the case has (in file order) when it has
/// any: one for a file that is not TOML, else one for each section that is
/// wrong (`worldline check` lists them all); when the world it names does
/// not load, that and the problems of the sections that do not need it.
pub fn parse_all(
    path: &Path,
    bytes: Vec<u8>,
    resolve: impl FnOnce(&str) -> Result<Arc<World>, InputError>,
) -> Result<Case, Vec<InputError>> {
    let text = InputError::utf8(path, bytes).map_err(|e| vec![e])?;
    crate::toml_tokens::check(path, &text).map_err(|e| vec![e])?;
    let src = Source { path, text: &text };
    let (doc, unread) = crate::sections::read::<CaseToml>(path, &text, &REQUIRED).map_err(
        |all| match another_kind(path, &text) {
            Some(m) => vec![InputError::new(path, m)],
            None => all,
        },
    )?;
    // Each check is independent: each problem is kept, and the case is
    // built only when there are none. Those that need the world wait for
    // it; the others are made even when it does not load.
    let mut problems: Vec<InputError> = unread;
    fn keep<T>(problems: &mut Vec<InputError>, r: Result<T, InputError>) {
        if let Err(e) = r {
            problems.push(e);
        }
    }
    let clock_ns = time::datetime_to_unix_ns(doc.clock.get_ref())
        .and_then(|ns| {
            if ns < 0 {
                Err("is before 1970-01-01T00:00:00Z, which WASI's wall clock cannot tell".into())
            } else {
                recorded::check_clock(ns).map(|()| ns)
            }
        })
        .map_err(|m| src.at(doc.clock.span().start, format!("clock: {m}")));
    let limits = doc.limits.check(path, &text);
    let exec_toml = crate::native_agent::ExecToml {
        exec: doc.exec.as_ref().map(|e| e.get_ref().clone()),
        pass_env: doc.pass_env.as_ref().map(|e| e.get_ref().clone()),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let exec = exec_toml.resolve(dir).map_err(|m| {
        let at = match m.starts_with("exec") {
            true => doc.exec.as_ref().map(|e| e.span().start),
            false => doc.pass_env.as_ref().map(|e| e.span().start),
        };
        src.at(at.unwrap_or(0), m)
    });
    let exec = match exec {
        Ok(e) => crate::native_agent::ExecSetting {
            line: (doc.exec.as_ref())
                .map_or(0, |e| crate::error::line_col(&text, e.span().start).0),
            ..e
        },
        Err(e) => {
            problems.push(e);
            Default::default()
        }
    };
    if let Some(e) = integer_past_toml(path, &text) {
        problems.push(e);
    }
    if let Some(e) = json_cannot_hold(path, &text) {
        problems.push(e);
    }
    if let Some(m) = &doc.model {
        // Each rule's or response's problem at its own table.
        for (entry, e) in m.get_ref().problems() {
            let at = model_entry_offset(&text, entry);
            problems.push(src.at(at.unwrap_or(m.span().start), e));
        }
    }
    if let Some(e) = &doc.env {
        keep(
            &mut problems,
            e.get_ref().check().map_err(|m| src.at(e.span().start, m)),
        );
    }
    if let Some(p) = &doc.prices {
        keep(
            &mut problems,
            (p.get_ref().check(&text)).map_err(|(at, m)| src.at(at.unwrap_or(p.span().start), m)),
        );
    }
    if let Some(u) = &doc.user {
        // A rule's problem at its own `[[user.rules]]` table.
        keep(
            &mut problems,
            match u.get_ref().problem() {
                Some((rule, m)) => {
                    let at = rule.and_then(|i| list_entry_offset(&text, "user", "rules", i));
                    Err(src.at(at.unwrap_or(u.span().start), m))
                }
                None => Ok(()),
            },
        );
    }
    for a in &doc.approve {
        keep(
            &mut problems,
            a.get_ref()
                .check()
                .map_err(|m| src.at(a.span().start, format!("[[approve]]: {m}"))),
        );
    }
    // Bounds no run can meet, each at its own check (found without the
    // world, so reported when it does not load too).
    // A check's problem at its own entry (else at `[expect]`), named by
    // its list and number.
    let placed = |n: expect::NeverHolds, expect: usize| {
        let at = n.offset_in(&text).unwrap_or(expect);
        src.at(at, format!("{}: {}", n.label(), n.message))
    };
    if let Some(e) = doc.expect.as_ref().filter(|_| recorded::new_rules_apply()) {
        for n in e.get_ref().never_holds() {
            problems.push(placed(n, e.span().start));
        }
        for (at, m) in expect::empty_output_lists(&text) {
            problems.push(src.at(at, m));
        }
    }
    let world = resolve(doc.world.get_ref())
        .map_err(|e| {
            if e.file == path && e.line.is_none() {
                src.at(doc.world.span().start, e.message)
            } else {
                e
            }
        })
        .map(|world| {
            let overlay: Vec<world::overlay::Overlay> =
                doc.overlay.iter().map(|o| o.get_ref().clone()).collect();
            // An overlay that does not apply is one problem: the other
            // sections are checked against the world without the overlays
            // (it hid every other problem of the case).
            world::overlay::apply(world.clone(), &overlay).unwrap_or_else(|m| {
                let at = m
                    .strip_prefix("[[overlay]] ")
                    .and_then(|rest| rest.split(':').next()?.parse::<usize>().ok())
                    .and_then(|n| doc.overlay.get(n - 1))
                    .map_or(0, |o| o.span().start);
                problems.push(src.at(at, m));
                world
            })
        });
    let world = match world {
        Ok(w) => w,
        Err(e) => {
            problems.push(e);
            keep(&mut problems, clock_ns);
            keep(&mut problems, limits);
            problems.sort_by_key(|e| (e.file != path, e.line));
            return Err(problems);
        }
    };
    if let Some(u) = &doc.user {
        let names: Vec<&str> = world.user_tools.iter().map(|t| t.name.as_str()).collect();
        keep(
            &mut problems,
            // At the rule's own `[[user.rules]]` table, not `[user]`.
            u.get_ref().check_calls(&names).map_err(|(rule, m)| {
                let at = list_entry_offset(&text, "user", "rules", rule);
                src.at(at.unwrap_or(u.span().start), m)
            }),
        );
    }
    let permissions = check_permissions(&src, doc.permissions.as_ref(), &world);
    let inject = check_inject(&src, &doc.inject, &world);
    if let Some(e) = &doc.expect {
        let args = match recorded::new_rules_apply() {
            true => e.get_ref().args_never_match(&world.tools),
            false => Vec::new(),
        };
        for n in e.get_ref().entry_problems(&world).into_iter().chain(args) {
            problems.push(placed(n, e.span().start));
        }
        for (at, m) in gold::call_problems(&e.get_ref().gold, &world) {
            problems.push(src.at(at, format!("[[expect.gold]]: {m}")));
        }
        keep(
            &mut problems,
            e.get_ref()
                .check(&world)
                .map_err(|(table, m)| match table.offset_in(&text) {
                    Some(at) => src.at(at, m),
                    None => src.at(e.span().start, format!("[expect]: {m}")),
                }),
        );
    }
    // No user ends a conversation in a case without one: `satisfied =
    // true` failed every run and `false` held for every run (a recorded
    // case keeps it, decision 0412).
    if let (Some(e), None) = (&doc.expect, &doc.user)
        && let Some(want) = (e.get_ref().conversation.as_ref()).and_then(|c| c.satisfied)
        && recorded::new_rules_apply()
    {
        let at = expect::Table::Conversation.offset_in(&text);
        problems.push(src.at(
            at.unwrap_or(e.span().start),
            format!(
                "[expect.conversation] satisfied = {want}: the case has no [user], so no user ends the conversation and this {}; add a [user], or leave `satisfied` out",
                match want {
                    true => "fails every run",
                    false => "holds for every run",
                }
            ),
        ));
    }
    let fuzz = (doc.fuzz.as_ref())
        .map(|f| {
            let placed = (f.get_ref(), Some(f.span().start));
            fuzz::check(path, &text, placed, Some(&world), "[fuzz]")
        })
        .transpose();
    // A profile of no mistake of its own, in a case with no user.
    if let (Some(f), Ok(_), None) = (&doc.fuzz, &fuzz, &doc.user) {
        problems.extend(fuzz::user_faults_without_user(
            path,
            &text,
            f.get_ref(),
            "[fuzz.user]",
        ));
    }
    let (clock_ns, permissions, limits, inject, fuzz) =
        match (clock_ns, permissions, limits, inject, fuzz) {
            (Ok(c), Ok(p), Ok(l), Ok(i), Ok(f)) if problems.is_empty() => (c, p, l, i, f),
            (c, p, l, i, f) => {
                problems.extend(i.err().into_iter().flatten());
                problems.extend(f.err().into_iter().flatten());
                problems.extend([c.err(), p.err(), l.err()].into_iter().flatten());
                problems.sort_by_key(|e| (e.file != path, e.line));
                return Err(problems);
            }
        };
    let world_numbers = world.numbers;
    Ok(Case {
        path: path.to_path_buf(),
        hash: canon::sha256_hex(text.as_bytes()),
        name: path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().to_string()),
        description: doc.description,
        tags: doc.tags,
        world: world::cache::share(world),
        task: Task(crate::canon::to_string(&doc.task)),
        seed: doc.seed.0,
        clock_ns,
        limits,
        env: doc.env.map(toml::Spanned::into_inner).unwrap_or_default(),
        exec,
        permissions,
        model: doc.model.map(|m| m.into_inner()).unwrap_or_default(),
        model_overrides: BTreeMap::new(),
        user_model_overrides: BTreeMap::new(),
        limit_overrides: BTreeMap::new(),
        inject,
        expect: doc.expect.map(|e| {
            let mut e = e.into_inner();
            e.numbers = e.numbers.or(Some(world_numbers));
            e
        }),
        fuzz,
        user: doc.user.map(|u| u.into_inner()),
        approve: doc.approve.into_iter().map(|a| a.into_inner()).collect(),
        origin: doc.origin,
        prices: doc.prices.map(|p| p.into_inner()).unwrap_or_default(),
        source: text,
    })
}

/// The case file's text, for errors that point into it.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn at(&self, offset: usize, message: impl Into<String>) -> InputError {
        InputError::at(self.path, self.text, offset, message)
    }
}

/// `[permissions]`, whose every rule must name a tool of the world.
fn check_permissions(
    src: &Source,
    permissions: Option<&toml::Spanned<Permissions>>,
    world: &World,
) -> Result<Permissions, InputError> {
    let Some(spanned) = permissions else {
        return Ok(Permissions::default());
    };
    let p = spanned.get_ref();
    match p.rule_naming_nothing(&world.tools) {
        Some(rule) => Err(src.at(
            spanned.span().start,
            format!(
                "[permissions] rule `{rule}` names no tool of {}",
                world.reference()
            ),
        )),
        None => Ok(p.clone()),
    }
}

/// `[[inject]]` rules in order, each with its checked action.
/// Each `[[inject]]` rule checked on its own (decision 0194: every rule's
/// problem is listed, not the first's alone).
fn check_inject(
    src: &Source,
    rules: &[toml::Spanned<inject::Inject>],
    world: &World,
) -> Result<Vec<(inject::Inject, inject::Action)>, Vec<InputError>> {
    let results: Vec<_> = (rules.iter())
        .map(|rule| check_rule(src, rule, world))
        .collect();
    // A rule an earlier one hides, among the rules that check (one that
    // does not has its own problem said).
    let fine: Vec<bool> = results.iter().map(Result::is_ok).collect();
    let (checked, mut problems): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    if recorded::new_rules_apply() {
        for (j, later) in rules.iter().enumerate().filter(|(j, _)| fine[*j]) {
            if let Some(i) = (0..j)
                .filter(|i| fine[*i])
                .find(|i| rules[*i].get_ref().hides(later.get_ref(), &world.tools))
            {
                problems.push(Err(src.at(
                    later.span().start,
                    format!(
                        "[[inject]]: every call it matches is taken by rule #{} before it (the first rule that matches a call answers it), so it never fires; put it first, or narrow the rule before it with `when` or `nth`",
                        i + 1
                    ),
                )));
            }
        }
    }
    match problems.is_empty() {
        true => Ok(checked.into_iter().map(Result::unwrap).collect()),
        false => Err(problems.into_iter().filter_map(Result::err).collect()),
    }
}

/// One `[[inject]]` rule against the world: its action and what it names.
fn check_rule(
    src: &Source,
    spanned: &toml::Spanned<inject::Inject>,
    world: &World,
) -> Result<(inject::Inject, inject::Action), InputError> {
    let rule = spanned.get_ref();
    let at = |m: String| src.at(spanned.span().start, format!("[[inject]]: {m}"));
    let action = rule.action().map_err(at)?;
    if let inject::Action::Injection(i) = &action {
        world::injection::check_target(
            i.vector.as_deref(),
            &world.injection_vectors,
            &world.reference(),
        )
        .map_err(at)?;
    }
    if !world::names_a_tool(&rule.tool, &world.tools) {
        return Err(at(format!(
            "tool `{}` names no tool of {}",
            rule.tool,
            world.reference()
        )));
    }
    if recorded::new_rules_apply() {
        if let Some(m) = rule.when_problem(&world.tools) {
            return Err(at(m));
        }
        if let Some(field) = rule.stale.as_ref().and_then(|s| s.field.as_deref())
            && let Some(m) =
                inject::stale_field_problem(&rule.tool, field, &world.tools, &world.initial)
        {
            return Err(at(m));
        }
        if let Some(p) = &rule.partial
            && let Some(m) =
                inject::partial_problem(&rule.tool, &p.fields, &world.tools, &world.initial)
        {
            return Err(at(m));
        }
    }
    Ok((rule.clone(), action))
}

impl Case {
    /// The case's model providers, each with the table it is written in:
    /// the agent's `[model]`, and the simulated user's `[user.model]` and
    /// the judge's `[expect.judge_model]` when the case has them.
    pub fn models(&self) -> [(&'static str, Option<&model::ModelConfig>); 3] {
        let user = self.user.as_ref().and_then(|u| u.model.as_ref());
        let judge = self.expect.as_ref().and_then(|e| e.judge_model.as_ref());
        [
            ("model", Some(&self.model)),
            ("user.model", user),
            ("expect.judge_model", judge),
        ]
    }

    /// Where the case writes the `recording` of `[model]` (`table` is
    /// `model`), `[user.model]` (`user.model`) or `[expect.judge_model]`
    /// (`expect.judge_model`) as `named`: its value's
    /// line and column, as `check` and a run name it (none when a flag
    /// gave another).
    pub fn recording_at(&self, table: &str, named: &str) -> Option<(usize, usize)> {
        use toml::de::{DeTable, DeValue};
        let doc = DeTable::parse(&self.source).ok()?.into_inner();
        let mut at = &doc;
        for name in table.split('.') {
            match at.get(name)?.get_ref() {
                DeValue::Table(t) => at = t,
                _ => return None,
            }
        }
        let value = at.get("recording")?;
        match value.get_ref() {
            DeValue::String(s) if s == named => {
                Some(crate::error::line_col(&self.source, value.span().start))
            }
            _ => None,
        }
    }

    /// Apply `--model-set KEY=VALUE` overrides to the case's `[model]`.
    pub fn override_model(
        &mut self,
        overrides: BTreeMap<String, String>,
    ) -> Result<(), InputError> {
        self.model = self
            .model
            .with_overrides(&overrides)
            .map_err(|m| InputError::new(&self.path, m))?;
        // Later overrides apply on top of earlier ones (a repro of a run
        // that was itself overridden), and the record keeps them all.
        self.model_overrides.extend(overrides);
        Ok(())
    }

    /// Apply `--user-model-set KEY=VALUE` overrides to a model-played
    /// user's `[user.model]`: a model then plays the user instead of its
    /// scripted stand-in (decision 0386). A case whose user is scripted (or
    /// has none) takes no user model: they are not applied, nor recorded.
    pub fn override_user_model(
        &mut self,
        overrides: BTreeMap<String, String>,
    ) -> Result<(), InputError> {
        let Some(user) = self.user.as_mut() else {
            return Ok(());
        };
        if user
            .override_model(&overrides)
            .map_err(|m| InputError::new(&self.path, m))?
        {
            self.user_model_overrides.extend(overrides);
        }
        Ok(())
    }

    /// Raise `[limits]` by name (`fuel`, `max_steps`, `max_events`,
    /// `max_errors`, `timeout_ms`), as `resume` does and a replay of a resumed run does
    /// again; later overrides apply on top of earlier ones and the record
    /// keeps them all. An unknown name is an error naming it.
    pub fn override_limits(&mut self, overrides: &BTreeMap<String, u64>) -> Result<(), InputError> {
        for (name, &value) in overrides {
            let l = &mut self.limits;
            match name.as_str() {
                "fuel" => l.fuel = value,
                "max_steps" => l.max_steps = Some(value),
                "max_events" => l.max_events = value,
                "max_errors" => l.max_errors = Some(value),
                "timeout_ms" if limits::TIMEOUT_MS.1 >= value => l.timeout_ms = value,
                "timeout_ms" => {
                    return Err(InputError::new(
                        &self.path,
                        format!(
                            "timeout_ms {value} is past {} (a day)",
                            limits::TIMEOUT_MS.1
                        ),
                    ));
                }
                _ => {
                    return Err(InputError::new(
                        &self.path,
                        format!(
                            "a recorded limit override names `{name}`; this worldline raises fuel, max_steps, max_events, max_errors and timeout_ms"
                        ),
                    ));
                }
            }
            self.limit_overrides.insert(name.clone(), value);
        }
        Ok(())
    }
}

/// The nearest `worlds/` folder in the case's folder or above it.
pub fn find_worlds_root(case_path: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(case_path).ok()?;
    abs.ancestors()
        .skip(1)
        .map(|d| d.join("worlds"))
        .find(|w| w.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct OnlySeed {
        seed: Seed,
    }

    fn seed(text: &str) -> Result<u64, String> {
        toml::from_str::<OnlySeed>(text)
            .map(|s| s.seed.0)
            .map_err(|e| e.to_string())
    }

    /// A project file, a world or a fault profile named as a case is said
    /// to be one (`run worldline.toml` said "unknown field `agent`").
    #[test]
    fn another_kind_of_file_named_as_a_case_is_said_to_be_it() {
        let said = |name: &str, text: &str| {
            let never = |_: &str| -> Result<Arc<World>, InputError> { unreachable!() };
            let all = parse_all(Path::new(name), text.as_bytes().to_vec(), never).unwrap_err();
            assert_eq!(all.len(), 1, "{all:?}");
            all[0].message.clone()
        };
        let project = said(
            "x/worldline.toml",
            "agent = \"a.wasm\"\ncases = [\"cases\"]\n",
        );
        assert!(project.starts_with("is the project file"), "{project}");
        let world = "name = \"w\"\nversion = 1\n[[tools]]\nname = \"g\"\nop = \"get\"\n";
        assert!(said("world.toml", world).starts_with("is a world"));
        let profile = said("p.toml", "clock_skew_s = [0, 5]\n");
        assert!(profile.starts_with("is a fault profile"), "{profile}");
        // A case missing its world is told so, as before.
        let case = said("c.toml", "task = \"t\"\nclock = 2026-03-01T12:00:00Z\n");
        assert!(case.contains("world"), "{case}");
    }

    /// A seed out of range says the range, both ends (it gave none past
    /// 0 for one too large).
    #[test]
    fn a_seed_out_of_range_says_the_range() {
        for bad in ["seed = 99999999999999999999999", "seed = -1", "seed = 1.5"] {
            let e = seed(bad).unwrap_err();
            assert!(e.contains("from 0 to 18446744073709551615"), "{bad}: {e}");
        }
        assert_eq!(seed("seed = 18446744073709551615"), Ok(u64::MAX));
        assert_eq!(seed("seed = \"18446744073709551615\""), Ok(u64::MAX));
    }

    /// A task read straight into JSON is the task read as TOML values and
    /// then turned into JSON: every TOML type, dates and times included.
    #[test]
    fn a_task_read_as_json_is_its_toml_turned_into_json() {
        #[derive(Deserialize)]
        struct AsToml {
            task: toml::Value,
        }
        #[derive(Deserialize)]
        struct AsJson {
            task: Value,
        }
        let text = r#"task = { s = "x\ny", i = -7, big = 9223372036854775807, f = 1.5, e = 6.02e23, nan = nan, inf = -inf, t = true, odt = 1979-05-27T07:32:00Z, ldt = 1979-05-27T07:32:00.999999, ld = 1979-05-27, lt = 07:32:00, off = 1979-05-27T00:32:00-07:00, list = [1, [2, "three"], { k = [] }], nested = { "a b" = { c = 1 } }, empty = {} }"#;
        let toml: AsToml = toml::from_str(text).unwrap();
        let json: AsJson = toml::from_str(text).unwrap();
        assert_eq!(serde_json::to_value(&toml.task).unwrap(), json.task);
        let tables = "[[task.calls]]\ntool = \"a\"\n[[task.calls]]\ntool = \"b\"\nwhen = 2026-03-01T12:00:00Z\n";
        let toml: AsToml = toml::from_str(tables).unwrap();
        let json: AsJson = toml::from_str(tables).unwrap();
        assert_eq!(serde_json::to_value(&toml.task).unwrap(), json.task);
    }

    /// A TOML date or time, or `nan` or an infinity, where the case gives
    /// JSON (the agent got `{"$__toml_private_datetime": …}` and `null`) is
    /// refused where it starts; the clock is a date, and a date in a string
    /// is text.
    #[test]
    fn a_value_no_json_holds_is_refused_where_it_starts() {
        let head = "world = \"w@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\n";
        let at = |body: &str| {
            json_cannot_hold(Path::new("c.toml"), &format!("{head}{body}")).map(|e| e.to_string())
        };
        assert_eq!(
            at("task = { due = \"2026-04-01\", note = \"info\" }\n"),
            None
        );
        let e = at("task = { calls = [ { args = { due = 2026-04-01 } } ] }\n").unwrap();
        assert!(
            e.starts_with("c.toml:4:37:") && e.contains("write it as a string"),
            "{e}"
        );
        let e =
            at("[[overlay]]\ntable = \"t\"\nrows = [{ id = \"a\", when = 1979-05-27T07:32:00 }]\n")
                .unwrap();
        assert!(e.starts_with("c.toml:6:"), "{e}");
        let e = at("task = { v = nan, w = 1.0 }\n").unwrap();
        assert!(
            e.starts_with("c.toml:4:14:") && e.contains("no JSON number"),
            "{e}"
        );
        assert!(
            at("task = { w = -inf }\n")
                .unwrap()
                .contains("no JSON number")
        );
        // Prices and limits say it by their own rule, once (a price of
        // `inf` was told twice, once to give "a string").
        assert_eq!(
            at("[prices.y]\noutput_per_mtok = inf\n[limits]\nfuel = nan\n"),
            None
        );
        assert!(at("[model]\nresponses = [{ text = \"x\", v = nan }]\n").is_some());
        // A check's value is JSON: `equals = inf` was `null`, and passed
        // against a null field. Its bounds and weight have their own rule.
        for body in [
            "[[expect.state]]\ntable = \"t\"\nkey = \"a\"\nfield = \"f\"\nequals = inf\n",
            "[[expect.state]]\ntable = \"t\"\nkey = \"a\"\nfield = \"f\"\ncontains = [nan]\n",
            "[[expect.state]]\ntable = \"t\"\nwhere = { min = -inf }\nmin = 1\n",
            "[[expect.gold]]\ntool = \"t\"\nargs = { x = inf }\n",
            "[[expect.turn]]\nturn = 1\n[[expect.turn.calls]]\ntool = \"t\"\nargs = { max = nan }\n",
        ] {
            let e = at(body).unwrap_or_else(|| panic!("not refused: {body}"));
            assert!(e.contains("no JSON number"), "{e}");
        }
        let e = at("[[expect.gold]]\ntool = \"t\"\nargs = { x = inf }\n").unwrap();
        assert!(e.starts_with("c.toml:6:14:"), "{e}");
        assert_eq!(
            at(
                "[[expect.state]]\ntable = \"t\"\nsum = \"f\"\nmin = -inf\nmax = inf\nweight = nan\n"
            ),
            None
        );
    }

    #[test]
    fn a_seed_past_toml_integers_is_written_as_its_digits() {
        assert_eq!(seed("seed = 7"), Ok(7));
        assert_eq!(seed("seed = \"18446744073709551615\""), Ok(u64::MAX));
        assert!(seed("seed = -1").unwrap_err().contains("whole number"));
        assert!(seed("seed = \"x\"").unwrap_err().contains("\"x\""));
    }
}
