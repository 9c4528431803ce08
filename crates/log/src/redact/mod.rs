//! Redaction at read time. Bundles keep everything (an on-call engineer
//! can see the real input); what is shown or exported for others passes
//! through a [`Redactor`] built from a policy (`<store>/redact.toml` or
//! `--redact FILE`):
//!
//! ```toml
//! # Whole values to hide: dotted paths under request, response, writes,
//! # state (table.key.field) or output; `*` is any key or index.
//! paths = ["request.args.email", "state.customers.*.address"]
//! # Built-in detectors run on every string (default: all of them).
//! detectors = ["email", "phone", "card", "iban", "api_key"]
//! [[custom]]
//! name = "customer"
//! pattern = "CUST-[0-9]{6}"
//! ```
//!
//! A found value becomes `<kind:xxxx>`, `xxxx` the start of the SHA-256 of
//! the store's secret salt (`<store>/redact.key`), the kind and the value:
//! equal values get equal placeholders, so a redacted timeline still shows
//! two calls used the same customer, and no one without the salt can test
//! a guess. Within one view, two values never share a placeholder (it
//! grows when their prefixes collide).

pub mod copy;
pub(crate) mod detect;
pub mod forms;
pub mod withheld;

use crate::log::bundle::{Edit, Header, HeldBundle};
use crate::log::{Event, Footer};
use detect::Detector;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use worldline_case::canon;
use worldline_case::error::InputError;
use worldline_case::world::state::{State, Write};

/// The policy file inside a store, and its salt.
pub const FILE: &str = "redact.toml";
const SALT_FILE: &str = "redact.key";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    paths: Vec<toml::Spanned<String>>,
    detectors: Option<Vec<toml::Spanned<String>>>,
    #[serde(default)]
    custom: Vec<Custom>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Custom {
    name: String,
    pattern: toml::Spanned<String>,
}

/// What a policy's path may start with: the parts of a run the redactor
/// walks ([`Redactor::value`]'s roots).
const ROOTS: [&str; 5] = ["request", "response", "writes", "state", "output"];

/// The fields of a write a path may hide (its `op` is its kind, never a
/// value).
const WRITE_FIELDS: [&str; 5] = ["table", "key", "row", "path", "data"];

/// A path as the paths that hide what it names value by value: the
/// redactor keeps a state's tables and rows, and a write's kind, as they
/// are (a table or a row replaced by its placeholder could not be read
/// back, and a write could not be kept: readers panicked on `state.T`,
/// and `writes` was left unhidden). So `state` and `state.T` hide every
/// row (`state.*.*`, `state.T.*`), and a path that names a write whole,
/// or its fields by `*`, hides each of its fields but `op`.
fn whole_values(mut parts: Vec<String>) -> Result<Vec<Vec<String>>, String> {
    match parts[0].as_str() {
        "state" => {
            while parts.len() < 3 {
                parts.push("*".into());
            }
            Ok(vec![parts])
        }
        "writes" if parts.get(2).is_some_and(|f| f == "op") => Err(format!(
            "path `{}` names a write's `op`, its kind (put, delete, file), never a value: name its {}",
            parts.join("."),
            WRITE_FIELDS.join(", ")
        )),
        "writes" if parts.len() <= 2 || parts[2] == "*" => {
            parts.resize(2, "*".into());
            Ok((WRITE_FIELDS.iter())
                .map(|f| {
                    let mut p = parts.clone();
                    p.push((*f).into());
                    p
                })
                .collect())
        }
        _ => Ok(vec![parts]),
    }
}

/// A parsed policy.
#[derive(Clone)]
pub struct Policy {
    paths: Vec<Vec<String>>,
    detectors: Vec<Detector>,
    /// SHA-256 of the policy text (named in a redacted export).
    pub hash: String,
}

impl Policy {
    /// Parse a policy file's text (`path` names it in errors).
    pub fn parse(path: &Path, source: &str) -> Result<Policy, InputError> {
        worldline_case::toml_tokens::check(path, source)?;
        let doc: PolicyFile =
            toml::from_str(source).map_err(|e| InputError::toml(path, source, &e))?;
        let mut detectors = Vec::new();
        match &doc.detectors {
            None => detectors.extend(
                detect::BUILT_IN
                    .iter()
                    .filter_map(|n| Detector::built_in(n)),
            ),
            Some(names) => {
                for n in names {
                    let d = Detector::built_in(n.get_ref()).ok_or_else(|| {
                        InputError::at(
                            path,
                            source,
                            n.span().start,
                            format!(
                                "unknown detector `{}` (use {})",
                                n.get_ref(),
                                detect::BUILT_IN.join(", ")
                            ),
                        )
                    })?;
                    detectors.push(d);
                }
            }
        }
        // A path no run holds would hide nothing, and a mistyped one
        // (`reqest.args.email`) would show what it was written to hide.
        for p in &doc.paths {
            let text = p.get_ref();
            let root = text.split('.').next().unwrap_or_default();
            let why = if text.split('.').any(str::is_empty) {
                Some(format!(
                    "path `{text}` has an empty part: write dotted keys, `*` for any key or index"
                ))
            } else if !ROOTS.contains(&root) {
                Some(format!(
                    "path `{text}` starts with `{root}`, which no run holds: start it with {}",
                    ROOTS.join(", ")
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(InputError::at(path, source, p.span().start, why));
            }
        }
        for c in &doc.custom {
            let d = Detector::custom(&c.name, c.pattern.get_ref()).map_err(|m| {
                InputError::at(
                    path,
                    source,
                    c.pattern.span().start,
                    format!("custom `{}`: {m}", c.name),
                )
            })?;
            detectors.push(d);
        }
        let mut paths = Vec::new();
        for p in &doc.paths {
            let parts: Vec<String> = p.get_ref().split('.').map(String::from).collect();
            let whole = whole_values(parts)
                .map_err(|why| InputError::at(path, source, p.span().start, why))?;
            paths.extend(whole);
        }
        Ok(Policy {
            paths,
            detectors,
            hash: canon::sha256_hex(source),
        })
    }

    /// Read a policy file.
    pub fn load(path: &Path) -> Result<Policy, InputError> {
        Policy::parse(path, &Policy::read(path)?)
    }

    /// A policy file's text: bytes that are not UTF-8 said at their line
    /// and column, as in a case.
    pub fn read(path: &Path) -> Result<String, InputError> {
        let bytes = worldline_case::bounded::read(path, worldline_case::bounded::DOCUMENT)
            .map_err(|e| InputError::new(path, format!("cannot read the redaction policy: {e}")))?;
        InputError::utf8(path, bytes)
    }
}

/// The redactor of one view: a policy, a salt, and the placeholders given
/// so far.
#[derive(Clone)]
pub struct Redactor {
    policy: Policy,
    salt: String,
    /// `kind \0 value` → placeholder.
    given: BTreeMap<String, String>,
    /// placeholder → `kind \0 value`.
    taken: BTreeMap<String, String>,
    /// Texts [`repeated`](Redactor::repeated) redacted, and their
    /// redaction.
    repeats: BTreeMap<String, String>,
    /// The values paths have hidden so far, as they may be quoted inside
    /// other text (a model message holding a tool's answer, a check's
    /// description), each with its placeholder; and their automaton, made
    /// again when one is added.
    quoted: Vec<(String, String)>,
    quoted_finder: Option<aho_corasick::AhoCorasick>,
    /// The placeholders this view has written (what [`hidden`](Redactor::hidden)
    /// counts): a value only learned (a world's state the run never read)
    /// is not hidden in it.
    shown: BTreeSet<String>,
    /// Set while learning: placeholders given then are not written.
    learning: bool,
    /// What the detectors made of each distinct text they were given (a
    /// text with the values paths hid already hidden): the text redacted
    /// and the placeholders it holds. A placeholder, once given, stands
    /// for its value for the rest of the view, so a text the detectors
    /// saw once comes out the same again, and is not scanned again: a
    /// long run's view puts back each model call's whole conversation,
    /// and scanned every message once per call (decision 0426). Looked up
    /// by text, never iterated.
    detected: HashMap<String, Detected>,
    /// Tests: learn every event whole and scan every text, as before
    /// decision 0426, to compare with.
    #[cfg(test)]
    plain: bool,
    /// Tests: how many bytes of text the detectors have read.
    #[cfg(test)]
    scanned: usize,
    /// Tests: how many bytes of text have been redacted (read by
    /// [`text`](Self::text), hidden quotes and detectors alike).
    #[cfg(test)]
    read: usize,
}

/// What the detectors made of one text ([`Redactor::detected`]).
#[derive(Clone)]
struct Detected {
    /// The text redacted; `None` when they found nothing in it.
    redacted: Option<String>,
    /// The placeholders it holds, each once.
    placeholders: Vec<String>,
}

/// How long a value a path hides must be to be hidden where other text
/// quotes it: a shorter one (`1`, `ok`) would hide pieces of every text.
const QUOTED_AT_LEAST: usize = 4;

/// Where a value is from the messages of a compact model call's request
/// (at its `request`, its chat request, its messages, or elsewhere), and
/// how many messages of its base it keeps before those it holds.
#[derive(Clone, Copy)]
enum Shift {
    Request(usize),
    Chat(usize),
    Messages(usize),
    None,
}

/// The placeholder kind of what a path of the policy hides.
const BY_PATH: &str = "redacted";

/// The state a grade's check quotes, as rows `(table, key, row)` for the
/// policy's `state` paths: a field check's expected and actual values at
/// `table/key.field`, and each value a `where` (of a count or a sum)
/// compares a field with, in a row of key `*`. The checks say what they
/// read in their description (`grade/state_checks.rs`).
fn checked_state(a: &Value) -> Vec<(String, String, Value)> {
    let Some(what) = a["what"].as_str() else {
        return Vec::new();
    };
    if let Some((head, where_)) = what.split_once(" where ") {
        let table = head
            .strip_prefix("count ")
            .or_else(|| head.strip_prefix("sum ").and_then(|t| t.split('.').next()));
        let where_ = where_.strip_suffix(" in range").unwrap_or(where_);
        let (Some(table), Ok(Value::Object(fields))) =
            (table, serde_json::from_str::<Value>(where_))
        else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        for (field, compared) in fields {
            let mut leaves = Vec::new();
            leaves_of(&compared, &mut leaves);
            rows.extend(
                leaves
                    .into_iter()
                    .map(|leaf| (table.to_string(), "*".to_string(), nested(&field, leaf))),
            );
        }
        return rows;
    }
    // `table/key.field verb` or `table/key verb`.
    let Some((table, rest)) = what
        .split_once(' ')
        .and_then(|(place, _)| place.split_once('/'))
    else {
        return Vec::new();
    };
    let (key, field) = rest
        .split_once('.')
        .map_or((rest, None), |(k, f)| (k, Some(f)));
    ["actual", "expected"]
        .into_iter()
        .map(|side| {
            let value = a[side].clone();
            let row = field.map_or_else(|| value.clone(), |f| nested(f, value.clone()));
            (table.to_string(), key.to_string(), row)
        })
        .collect()
}

/// The values a `where` entry compares with: the value itself, or each
/// value an operator table (`{ eq = … }`, `{ any_of = [...] }`) holds.
fn leaves_of(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => m.values().for_each(|x| leaves_of(x, out)),
        Value::Array(a) => a.iter().for_each(|x| leaves_of(x, out)),
        other => out.push(other.clone()),
    }
}

/// A row holding `value` at `path` (a state diff's field path, in the
/// syntax of checks: `passengers[1].dob`), each step a key, an index its
/// number (a policy's path names an element by its number, `*` any): so
/// the policy's `state` paths meet it as they meet the run's state. A
/// path that does not parse is one field.
fn nested(path: &str, value: Value) -> Value {
    use worldline_case::path::{JsonPath, Segment};
    let parsed = JsonPath::parse(path);
    let whole = [Segment::Field(path.to_string())];
    let segments = parsed.as_ref().map_or(&whole[..], |p| p.segments());
    segments.iter().rev().fold(value, |inner, segment| {
        let key = match segment {
            Segment::Field(f) => f.clone(),
            Segment::Index(i) => i.to_string(),
        };
        Value::Object(serde_json::Map::from_iter([(key, inner)]))
    })
}

/// A value a path hides, as the text its placeholder stands for.
fn leaf_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => canon::to_string(other),
    }
}

/// The redactor for a command: `--unredacted` gives none; else the policy
/// `explicit` names, or the store's `redact.toml` when there is one.
pub fn for_store(
    store_root: &Path,
    explicit: Option<&Path>,
    unredacted: bool,
) -> anyhow::Result<Option<Redactor>> {
    if unredacted {
        return Ok(None);
    }
    let in_store = store_root.join(FILE);
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        // Only a store without the file shows everything: one that does
        // not read (a link to nothing, a folder) is refused, not passed
        // over as none (it showed every value raw).
        None => match std::fs::symlink_metadata(&in_store) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ if in_store.is_file() => in_store,
            _ => {
                use worldline_case::bounded::{Refused, open};
                let what = match open(&in_store) {
                    Err(Refused::NotAFile(kind)) => kind,
                    _ => "a link to nothing",
                };
                return Err(InputError::new(
                    &in_store,
                    format!("is the store's redaction policy but {what}, not a file: make it the policy's file, or remove it to show runs unredacted"),
                )
                .into());
            }
        },
    };
    let policy = Policy::load(&path)?;
    Ok(Some(Redactor::new(policy, salt(store_root)?)))
}

/// The redactor of a database store's shared policy (its `redact.toml`
/// text, kept in the database) and salt.
pub fn shared(policy: &str, salt: &str) -> Result<Redactor, InputError> {
    let policy = Policy::parse(Path::new("the store's redaction policy"), policy)?;
    Ok(Redactor::new(policy, salt.to_string()))
}

/// The store's secret salt, made from the system's randomness on first use.
fn salt(store_root: &Path) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let path = store_root.join(SALT_FILE);
    if let Ok(s) = std::fs::read_to_string(&path)
        && s.len() == 64
    {
        return Ok(s);
    }
    let mut bytes = [0u8; 32];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").context("opening /dev/urandom")?,
        &mut bytes,
    )?;
    let fresh = hex::encode(bytes);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, &fresh).with_context(|| format!("writing {}", tmp.display()))?;
    // Two processes may race: the first name wins, and both use it.
    if std::fs::hard_link(&tmp, &path).is_err() && !path.is_file() {
        anyhow::bail!("cannot create {}", path.display());
    }
    let _ = std::fs::remove_file(&tmp);
    Ok(std::fs::read_to_string(&path)?)
}

impl Redactor {
    pub fn new(policy: Policy, salt: String) -> Redactor {
        Redactor {
            policy,
            salt,
            given: BTreeMap::new(),
            taken: BTreeMap::new(),
            repeats: BTreeMap::new(),
            quoted: Vec::new(),
            quoted_finder: None,
            shown: BTreeSet::new(),
            learning: false,
            detected: HashMap::new(),
            #[cfg(test)]
            plain: false,
            #[cfg(test)]
            scanned: 0,
            #[cfg(test)]
            read: 0,
        }
    }

    pub fn policy_hash(&self) -> &str {
        &self.policy.hash
    }

    /// How many distinct values this view has hidden (placeholders it
    /// wrote; not values it only learned).
    pub fn hidden(&self) -> usize {
        self.shown.len()
    }

    /// Note that this view wrote placeholder `p` (unless it is learning).
    fn wrote(&mut self, p: &str) {
        if !self.learning && !self.shown.contains(p) {
            self.shown.insert(p.to_string());
        }
    }

    /// `f` run as learning: what it hides is known to the view after it,
    /// and counted as hidden only once the view writes it.
    fn learn_only<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let was = std::mem::replace(&mut self.learning, true);
        let out = f(self);
        self.learning = was;
        out
    }

    /// The placeholder of a value of a kind.
    fn placeholder(&mut self, kind: &str, value: &str) -> String {
        let id = format!("{kind}\0{value}");
        if let Some(p) = self.given.get(&id).cloned() {
            self.wrote(&p);
            return p;
        }
        let digest = canon::sha256_hex(format!("{}\0{id}", self.salt));
        let mut n = 4;
        let p = loop {
            let p = format!("<{kind}:{}>", &digest[..n]);
            if !self.taken.contains_key(&p) || n == digest.len() {
                break p;
            }
            n += 2;
        };
        self.taken.insert(p.clone(), id.clone());
        self.given.insert(id, p.clone());
        self.wrote(&p);
        p
    }

    /// Whether a text from a run is shown hidden only once the run is
    /// learnt: the policy's paths hide values the run's events (or its
    /// world) hold, which text elsewhere may quote (a failure signature
    /// naming a hidden key). Detectors alone read the text itself.
    pub fn needs_the_run(&self) -> bool {
        !self.policy.paths.is_empty()
    }

    /// [`text`](Self::text) of a short text many rows share (a failure
    /// signature): each distinct one is redacted once.
    pub fn repeated(&mut self, text: String) -> String {
        if let Some(done) = self.repeats.get(&text) {
            return done.clone();
        }
        let done = self.text(&text);
        self.repeats.insert(text, done.clone());
        done
    }

    /// Note a value a path hid, to hide where other text quotes it: as it
    /// is, and in each form JSON text holds it ([`forms::json_forms`]: a
    /// tool's answer in a model message's content, written by Python's
    /// `json.dumps` with what is not ASCII escaped).
    fn quote(&mut self, text: &str, placeholder: &str) {
        if text.chars().count() < QUOTED_AT_LEAST {
            return;
        }
        for form in forms::json_forms(text) {
            if !self.quoted.iter().any(|(t, _)| *t == form) {
                self.quoted.push((form, placeholder.to_string()));
                self.quoted_finder = None;
            }
        }
    }

    /// `text` with every value a path hid that it quotes replaced by that
    /// value's placeholder (the longest first where two overlap).
    fn hide_quoted(&mut self, text: &str) -> String {
        if self.quoted.is_empty() {
            return text.to_string();
        }
        let finder = self.quoted_finder.get_or_insert_with(|| {
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                .build(self.quoted.iter().map(|(t, _)| t))
                .expect("plain texts build an automaton")
        });
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut wrote = Vec::new();
        for m in finder.find_iter(text) {
            out.push_str(&text[at..m.start()]);
            out.push_str(&self.quoted[m.pattern().as_usize()].1);
            wrote.push(m.pattern().as_usize());
            at = m.end();
        }
        for i in wrote {
            let p = self.quoted[i].1.clone();
            self.wrote(&p);
        }
        out.push_str(&text[at..]);
        out
    }

    /// Text with every value a path hid that it quotes, and everything the
    /// detectors find, replaced.
    pub fn text(&mut self, text: &str) -> String {
        #[cfg(test)]
        {
            self.read += text.len();
        }
        let out = self.hide_quoted(text);
        if self.plain() {
            return self.detect(&out).0;
        }
        if let Some(seen) = self.detected.get(&out) {
            let seen = seen.clone();
            for p in &seen.placeholders {
                self.wrote(p);
            }
            return seen.redacted.unwrap_or(out);
        }
        let (redacted, placeholders) = self.detect(&out);
        self.detected.insert(
            out.clone(),
            Detected {
                redacted: (redacted != out).then(|| redacted.clone()),
                placeholders,
            },
        );
        redacted
    }

    /// Everything the detectors find in `text` replaced, and the
    /// placeholders that replaced it.
    fn detect(&mut self, text: &str) -> (String, Vec<String>) {
        #[cfg(test)]
        {
            self.scanned += text.len();
        }
        let mut out = text.to_string();
        let mut placeholders = BTreeSet::new();
        for i in 0..self.policy.detectors.len() {
            let spans = self.policy.detectors[i].find(&out);
            if spans.is_empty() {
                continue;
            }
            let kind = self.policy.detectors[i].kind.clone();
            let mut next = String::with_capacity(out.len());
            let mut at = 0;
            for (a, b) in spans {
                next.push_str(&out[at..a]);
                let p = self.placeholder(&kind, &out[a..b]);
                next.push_str(&p);
                placeholders.insert(p);
                at = b;
            }
            next.push_str(&out[at..]);
            out = next;
        }
        (out, placeholders.into_iter().collect())
    }

    /// A JSON value found under `root` (`request`, `response`, `writes`,
    /// `state`, `output`): the policy's paths first, then the detectors on
    /// every string and object key.
    pub fn value(&mut self, root: &str, v: &mut Value) {
        self.paths(root, v);
        self.strings(v);
    }

    /// The policy's `request` paths over the tool calls a model's reply
    /// asks for, each read as the call it will be (`{"name", "args"}`):
    /// a value a `request.args` path hides was shown in the reply that
    /// asked for the call, which comes before the call itself.
    fn asked_arguments(&mut self, response: &mut Value) {
        let calls = (response["ok"]["choices"]
            .as_array_mut()
            .into_iter()
            .flatten())
        .filter_map(|c| c["message"]["tool_calls"].as_array_mut())
        .flatten();
        for call in calls {
            let f = &mut call["function"];
            let Some(args) = f["arguments"].as_str() else {
                continue;
            };
            let Ok(args) = serde_json::from_str::<Value>(args) else {
                continue;
            };
            let mut view = json!({"name": f["name"].clone(), "args": args});
            let before = view.clone();
            self.paths("request", &mut view);
            if view != before {
                f["arguments"] = Value::String(canon::to_string(&view["args"]));
            }
        }
    }

    /// Only the policy's paths under `root`.
    fn paths(&mut self, root: &str, v: &mut Value) {
        let paths: Vec<Vec<String>> = self
            .policy
            .paths
            .iter()
            .filter(|p| p.first().is_some_and(|r| r == root))
            .map(|p| p[1..].to_vec())
            .collect();
        for p in &paths {
            self.at_path(v, p);
        }
    }

    fn at_path(&mut self, v: &mut Value, path: &[String]) {
        self.at_path_shifted(v, path, Shift::None);
    }

    /// [`at_path`](Self::at_path) where `shift` says how far this value is
    /// from the messages of a compact model call's request, whose first
    /// held message is message `keep` of the whole.
    fn at_path_shifted(&mut self, v: &mut Value, path: &[String], shift: Shift) {
        let Some((head, rest)) = path.split_first() else {
            if !is_placeholder(v) {
                let text = leaf_text(v);
                // A value hidden before was quoted then, with the same
                // placeholder: its forms are known (a path over every
                // message made them again at every model call).
                let known = (self.given).contains_key(&format!("{BY_PATH}\0{text}"));
                let placeholder = self.placeholder(BY_PATH, &text);
                if !known {
                    self.quote(&text, &placeholder);
                }
                *v = Value::String(placeholder);
            }
            return;
        };
        match v {
            Value::Object(m) => {
                for (k, child) in m.iter_mut() {
                    if head == "*" || head == k {
                        let inner = match (shift, k.as_str()) {
                            (Shift::Request(keep), "request") => Shift::Chat(keep),
                            (Shift::Chat(keep), "messages") => Shift::Messages(keep),
                            _ => Shift::None,
                        };
                        self.at_path_shifted(child, rest, inner);
                    }
                }
            }
            Value::Array(a) => {
                let from = match shift {
                    Shift::Messages(keep) => keep,
                    _ => 0,
                };
                for (i, child) in a.iter_mut().enumerate() {
                    if head == "*" || *head == (from + i).to_string() {
                        self.at_path_shifted(child, rest, Shift::None);
                    }
                }
            }
            _ => {}
        }
    }

    fn strings(&mut self, v: &mut Value) {
        match v {
            Value::String(s) => {
                let r = self.text(s);
                if r != *s {
                    *s = r;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.strings(x)),
            Value::Object(m) => {
                let old = std::mem::take(m);
                for (k, mut x) in old {
                    self.strings(&mut x);
                    m.insert(self.text(&k), x);
                }
            }
            _ => {}
        }
    }

    /// An event's request, response and writes.
    pub fn event(&mut self, e: &mut Event) {
        self.event_hiding(e);
    }

    /// [`event`](Self::event); how many values paths had hidden when the
    /// detectors read its request ([`before`](Self::before) compares it).
    fn event_hiding(&mut self, e: &mut Event) -> usize {
        if crate::log::Kind::of(&e.call) == Some(crate::log::Kind::ModelComplete) {
            self.asked_arguments(&mut e.response);
        }
        self.value("request", &mut e.request);
        let quoted = self.quoted.len();
        self.after_request(e);
        quoted
    }

    /// What [`event`](Self::event) hides after the request: the response,
    /// what was injected, and the writes.
    fn after_request(&mut self, e: &mut Event) {
        if crate::log::Kind::of(&e.call) == Some(crate::log::Kind::ModelComplete) {
            withheld::model_call(&mut e.response);
        }
        self.value("response", &mut e.response);
        if let Some(i) = e.injected.as_mut() {
            self.strings(i);
        }
        // A row an event writes is state: the policy's `state` paths hide
        // its fields as they do the state's (a fork's `--set` value was
        // shown raw in its event's writes, before any view of the state
        // after it had hidden it).
        for w in e.writes.iter_mut() {
            if let Write::Put { table, key, row } = w {
                let mut view = json!({ table.as_str(): { key.as_str(): std::mem::take(row) } });
                self.paths("state", &mut view);
                *row = view[table.as_str()][key.as_str()].take();
            }
        }
        if !e.writes.is_empty() {
            let mut w = serde_json::to_value(&e.writes).expect("writes serialize");
            self.value("writes", &mut w);
            if let Ok(back) = serde_json::from_value(w) {
                e.writes = back;
            }
        }
    }

    /// Learn held model call `seq`, which keeps `keep` messages of its
    /// base (whose whole request the detectors read when paths had hidden
    /// `base_quoted` values), from what it holds: what it appended and
    /// the fields it changed. What it keeps was learnt with its base, at
    /// the same places, so the paths hide nothing new there, and the
    /// detectors, which saw those texts with the same values hidden, find
    /// nothing new either ([`Redactor::detected`]); when paths have hidden
    /// more since (a value the kept messages may quote), its whole request
    /// is read again, as [`event`](Self::event) reads it. Returns what
    /// [`event_hiding`](Self::event_hiding) returns.
    fn learn_extending(
        &mut self,
        events: &mut crate::log::Held,
        seq: u64,
        keep: usize,
        base_quoted: usize,
    ) -> usize {
        let mut e = events.get(seq).expect("a held event").clone();
        self.asked_arguments(&mut e.response);
        self.paths_extending(&mut e.request, keep);
        if self.quoted.len() == base_quoted {
            self.strings(&mut e.request);
        } else {
            let mut whole = events.request(seq).expect("a held event").into_owned();
            self.value("request", &mut whole);
        }
        let quoted = self.quoted.len();
        self.after_request(&mut e);
        quoted
    }

    /// [`event`](Self::event) of a compact model call as held, which keeps
    /// `keep` messages of its base: the paths at the places its messages
    /// have in the whole conversation.
    fn event_extending(&mut self, e: &mut Event, keep: usize) {
        self.asked_arguments(&mut e.response);
        self.paths_extending(&mut e.request, keep);
        self.strings(&mut e.request);
        self.after_request(e);
    }

    /// The policy's `request` paths over a compact model call's request,
    /// which keeps `keep` messages of its base: at the places its
    /// messages have in the whole conversation.
    fn paths_extending(&mut self, request: &mut Value, keep: usize) {
        let paths: Vec<Vec<String>> = (self.policy.paths.iter())
            .filter(|p| p[0] == "request")
            .map(|p| p[1..].to_vec())
            .collect();
        for p in &paths {
            self.at_path_shifted(request, p, Shift::Request(keep));
        }
    }

    /// Whether a compact model call is learnt and redacted as held (what
    /// it appended and the fields it changed): under a policy that
    /// [learns it so](Self::learns_compact), unless [`plain`](Self::plain).
    fn compact(&self) -> bool {
        self.learns_compact() && !self.plain()
    }

    /// Tests: as before decision 0426 ([`Redactor::plain`]).
    fn plain(&self) -> bool {
        #[cfg(test)]
        return self.plain;
        #[cfg(not(test))]
        false
    }

    /// Whether a compact model call may be learnt from what it holds
    /// ([`learn_extending`](Self::learn_extending)): no path of the policy
    /// hides its chat request or its messages whole (their placeholder is
    /// the whole conversation's, another at every call).
    fn learns_compact(&self) -> bool {
        !self.policy.paths.iter().any(|p| {
            p[0] == "request"
                && p.len() <= 3
                && (p[1..].iter())
                    .zip(["request", "messages"])
                    .all(|(part, name)| part == "*" || part == name)
        })
    }

    /// A world state: tables as `table.key.field` under `state`, and files.
    pub fn state(&mut self, s: &mut State) {
        let mut view = serde_json::Map::new();
        for (name, t) in &s.tables {
            let rows: serde_json::Map<String, Value> =
                t.rows.iter().map(|(k, r)| (k.clone(), r.clone())).collect();
            view.insert(name.clone(), Value::Object(rows));
        }
        let mut view = Value::Object(view);
        self.value("state", &mut view);
        for (name, t) in s.tables.iter_mut() {
            if let Some(Value::Object(rows)) = view.get_mut(name) {
                t.rows = std::mem::take(rows).into_iter().collect();
            }
        }
        // A file's path too (`notes/CUST-123456.txt` was shown whole by
        // `show`, `diff` and the UI, though hidden in the event naming it).
        let files = std::mem::take(&mut s.files);
        for (path, mut data) in files {
            if let worldline_case::world::state::FileData::Text(text) = &mut data {
                *text = self.text(text);
            }
            s.files.insert(self.text(&path), data);
        }
    }

    /// A footer's output (paths under `output` when it is JSON), streams,
    /// error and grade.
    pub fn footer(&mut self, f: &mut Footer) {
        if let Some(out) = f.output.as_mut() {
            *out = self.output(out);
        }
        f.stdout = self.text(&f.stdout);
        f.stderr = self.text(&f.stderr);
        if let Some(e) = f.error.as_mut() {
            *e = self.text(e);
        }
        if let Some(g) = f.grade.as_mut() {
            self.state_in_grade(g);
            self.hidden_again(g);
            self.strings(g);
        }
    }

    /// The policy's `state` paths over the state a grade quotes: the rows
    /// its state diff holds (added and removed rows; a changed field's
    /// value before and after) and what its checks read ([`checked_state`]),
    /// so that [`hidden_again`](Self::hidden_again) and the text of its
    /// descriptions hide those values wherever the grade quotes them, in a
    /// view that has not redacted the run's state itself (`export
    /// --redacted` writes no state: its grade showed them).
    fn state_in_grade(&mut self, g: &Value) {
        for (table, diff) in g["diff"]["tables"].as_object().into_iter().flatten() {
            for section in ["added", "removed"] {
                for (key, row) in diff[section].as_object().into_iter().flatten() {
                    self.state_row(table, key, row.clone());
                }
            }
            for (key, fields) in diff["changed"].as_object().into_iter().flatten() {
                for (field, change) in fields.as_object().into_iter().flatten() {
                    for which in ["before", "after"] {
                        self.state_row(table, key, nested(field, change[which].clone()));
                    }
                }
            }
        }
        self.checks_state(&g["assertions"]);
    }

    /// Learn the state each check of `checks` (a grade's assertions, a
    /// report case's failures) quotes ([`checked_state`]).
    fn checks_state(&mut self, checks: &Value) {
        for a in checks.as_array().into_iter().flatten() {
            for (table, key, row) in checked_state(a) {
                self.state_row(&table, &key, row);
            }
        }
    }

    /// The policy's `state` paths over one row as the run's state holds
    /// it (what they hide is noted for the rest of the view).
    fn state_row(&mut self, table: &str, key: &str, row: Value) {
        self.learn_only(|r| r.paths("state", &mut json!({ table: { key: row } })));
    }

    /// Every value of `v` that a path rule has hidden elsewhere in this
    /// view, hidden here too with the same placeholder: a grade's checks
    /// and a replay's divergence quote the values a run's output or state
    /// held, where no path of the policy reaches (the grade printed the
    /// `cause_deploy` the output line hid).
    fn hidden_again(&mut self, v: &mut Value) {
        match v {
            Value::Array(a) => a.iter_mut().for_each(|x| self.hidden_again(x)),
            Value::Object(m) => m.values_mut().for_each(|x| self.hidden_again(x)),
            // A bool is one bit, and a grade's own `passed` flags are
            // bools: hiding every `true` of a grade would hide its verdicts.
            Value::Null | Value::Bool(_) => {}
            leaf => {
                let id = format!("{BY_PATH}\0{}", leaf_text(leaf));
                if let Some(p) = self.given.get(&id).cloned() {
                    self.wrote(&p);
                    *leaf = Value::String(p);
                }
            }
        }
    }

    /// A header: its case's name and a native agent's command line and
    /// output file as text (a key or an address passed as an argument
    /// was shown raw), and its fork edits: an answer as a `response`, a
    /// patch as the state it sets (`state.table.key[.field]`), tool names
    /// as text.
    pub fn header(&mut self, h: &mut Header) {
        h.case = self.text(&h.case);
        // A native process's `[env] vars` (a key the case hands its agent)
        // and `--model-set` values, as text: they were shown raw.
        if let Some(env) = h.env.as_mut() {
            for value in env.vars.values_mut() {
                *value = self.text(value);
            }
        }
        for value in h.model_overrides.values_mut() {
            *value = self.text(value);
        }
        if let Some(native) = h.native.as_mut() {
            for arg in &mut native.command {
                *arg = self.text(arg);
            }
            if let Some(file) = native.output_file.as_mut() {
                *file = self.text(&file.to_string_lossy()).into();
            }
        }
        let Some(p) = h.parent.as_mut() else {
            return;
        };
        let mut edits: Vec<&mut Edit> = p.edits.iter_mut().collect();
        edits.extend(p.earlier.iter_mut().flat_map(|fp| fp.edits.iter_mut()));
        for edit in edits {
            match edit {
                Edit::Respond { response } => self.value("response", response),
                Edit::Allow { tool } | Edit::Deny { tool } => *tool = self.text(tool),
                Edit::Reseed { .. } => {}
                Edit::Set { path, value } => {
                    // `table/key` or `table/key.field`, seen as the state
                    // it writes so that `state.*` paths apply.
                    let (table, rest) = path.split_once('/').unwrap_or((path.as_str(), ""));
                    let (key, field) = match rest.split_once('.') {
                        Some((k, f)) => (k, Some(f)),
                        None => (rest, None),
                    };
                    let mut inner = value.take();
                    if let Some(f) = field {
                        inner = serde_json::json!({ f: inner });
                    }
                    let mut view = serde_json::json!({ table: { key: inner } });
                    self.paths("state", &mut view);
                    let mut back = view[table][key].take();
                    // The row hidden whole (`state.T.*`) is its placeholder.
                    if let Some(f) = field
                        && back.is_object()
                    {
                        back = back[f].take();
                    }
                    self.strings(&mut back);
                    *value = back;
                    *path = self.text(path);
                }
            }
        }
    }

    /// A whole run held compact (decision 0380): its header's edits, its
    /// events and its footer, once the whole run is learnt. A compact
    /// model call is redacted as held (what it appended and the fields it
    /// changed, [`event_extending`](Self::event_extending)) and still
    /// extends its base: what it keeps was redacted there, alike, since
    /// nothing is learnt while showing. Putting back each call's whole
    /// conversation to redact it made a long run's page and `history`
    /// quadratic in its length. Under a policy that hides a chat request
    /// or its messages whole (another placeholder at every call), each
    /// event is put back whole, redacted, and held compact again.
    pub fn held(&mut self, b: &mut HeldBundle) {
        self.whole(&b.header, &mut b.events, b.footer.as_ref());
        self.header(&mut b.header);
        if self.compact() {
            b.events = b.events.map_held(|e, keep| match keep {
                Some(keep) => self.event_extending(e, keep),
                None => self.event(e),
            });
        } else {
            let mut events = std::mem::take(&mut b.events);
            for seq in 0..events.len() as u64 {
                let mut e = events.event(seq).expect("a held event").into_owned();
                self.event(&mut e);
                b.events.push(e);
            }
        }
        if let Some(f) = b.footer.as_mut() {
            self.footer(f);
        }
    }

    /// Learn what `events` hide, showing nothing: a view of two runs side
    /// by side (`diff`) learns both first, so a value one run hides later
    /// is hidden wherever either quotes it (it was shown on one side and
    /// hidden on the other: a false first difference, and the
    /// placeholder's meaning told).
    /// Learn what `state`'s paths of the policy hide in `s` (a world's
    /// initial state), to hide it where an event quotes it (a get's
    /// answer, before any write), without showing `s`.
    pub fn learn_state(&mut self, s: &State) {
        self.learn_only(|r| r.state(&mut s.clone()));
    }

    pub fn learn<'e>(&mut self, events: impl IntoIterator<Item = &'e Event>) {
        self.learn_only(|r| {
            for e in events {
                r.event(&mut e.clone());
            }
        });
    }

    /// What a view of event `at` alone must know first: the values the
    /// run's header and its events before `at` hid, each hidden again
    /// wherever event `at` quotes it (`show --at` and the UI's event page
    /// showed a tool answer's hidden field whole inside the next model
    /// call's messages).
    ///
    /// A model call held compact is learnt from what it holds
    /// ([`learn_extending`](Self::learn_extending)): putting back each
    /// call's whole conversation and reading it again made a long run's
    /// view quadratic in its length (decision 0426).
    pub fn before(&mut self, header: &Header, events: &mut crate::log::Held, at: u64) {
        self.learn_only(|r| {
            r.header(&mut header.clone());
            r.learn_first(events, at);
        });
    }

    /// Learn what a run's events held compact hide, showing nothing: as
    /// [`learn`](Self::learn) learns them put back whole one at a time,
    /// each compact model call from what it holds
    /// ([`learn_extending`](Self::learn_extending)).
    pub fn learn_held(&mut self, events: &mut crate::log::Held) {
        let len = events.len() as u64;
        self.learn_only(|r| r.learn_first(events, len));
    }

    /// Learn events `0..at` of `events` (see [`before`](Self::before)).
    fn learn_first(&mut self, events: &mut crate::log::Held, at: u64) {
        let compact = self.compact();
        let at = at.min(events.len() as u64);
        // How many values paths had hidden when the detectors read each
        // event's whole request.
        let mut read_at: Vec<usize> = Vec::with_capacity(at as usize);
        for seq in 0..at {
            let extending = (events.extends(seq))
                .filter(|_| compact)
                .and_then(|(base, keep)| Some((keep, *read_at.get(base as usize)?)));
            let quoted = match extending {
                Some((keep, base_quoted)) => self.learn_extending(events, seq, keep, base_quoted),
                None => {
                    let mut e = events.event(seq).expect("a held event").into_owned();
                    self.event_hiding(&mut e)
                }
            };
            read_at.push(quoted);
        }
    }

    /// Learn what a whole run hides (its header, its events and its
    /// footer), showing nothing: a view of a whole run
    /// (`history`, the UI's run page, a redacted copy) hides a value
    /// wherever it quotes it, before the event that showed it to be
    /// hidden too. A list's answer quoted a title in clear a few events
    /// before a get's answer hid it, in the same listing or copy.
    pub fn whole(
        &mut self,
        header: &Header,
        events: &mut crate::log::Held,
        footer: Option<&Footer>,
    ) {
        let len = events.len() as u64;
        self.before(header, events, len);
        if let Some(f) = footer {
            self.learn_only(|r| r.footer(&mut f.clone()));
        }
    }

    /// One side of a replay's divergence at `field` (`request`, `response`,
    /// `writes`, ...; none: a whole event): the paths under that root as
    /// an event's, then what [`json`](Self::json) hides (the UI's replay
    /// showed a `request.args.text` that `show` hid).
    pub fn divergence(&mut self, field: Option<&str>, v: &mut Value) {
        // A model call's token ids and log-probabilities are withheld
        // (decision 0428), as from its event.
        match field {
            Some("response") if v.get("model_call").is_some() => withheld::model_call(v),
            None if v["call"] == crate::log::Kind::ModelComplete.name() => {
                if let Some(r) = v.get_mut("response") {
                    withheld::model_call(r);
                }
            }
            _ => {}
        }
        match field {
            Some(root @ ("request" | "response" | "writes" | "output")) => self.paths(root, v),
            Some(_) => {}
            None => {
                for root in ["request", "response", "writes"] {
                    if let Some(x) = v.get_mut(root) {
                        self.paths(root, x);
                    }
                }
            }
        }
        self.json(v);
    }

    /// A kept report (a suite's or shard's `test --json`, a fuzz
    /// campaign's): the state each case's failing checks quote learned as
    /// a grade's is ([`checked_state`]), so the values the policy's
    /// `state` paths hide are hidden where the checks and their reasons
    /// quote them, then what [`json`](Self::json) hides (a shard's
    /// report showed a path-hidden field's value raw).
    pub fn report(&mut self, v: &mut Value) {
        for case in v["cases"].as_array().into_iter().flatten() {
            self.checks_state(&case["failures"]);
        }
        self.json(v);
    }

    /// Any other JSON a view shows: the values a path hid elsewhere, and
    /// the detectors on every string and object key.
    pub fn json(&mut self, v: &mut Value) {
        self.hidden_again(v);
        self.strings(v);
    }

    /// A run's output text.
    pub fn output(&mut self, text: &str) -> String {
        match serde_json::from_str::<Value>(text) {
            Ok(mut v) => {
                self.value("output", &mut v);
                canon::to_string(&v)
            }
            Err(_) => self.text(text),
        }
    }
}

fn is_placeholder(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.starts_with('<') && s.ends_with('>') && s.contains(':'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor(policy: &str) -> Redactor {
        Redactor::new(
            Policy::parse(Path::new("redact.toml"), policy).unwrap(),
            "salt".into(),
        )
    }

    /// A file's path in a state passes the detectors, as its contents do
    /// (`show`, `diff` and the UI printed `notes/CUST-123456.txt`).
    #[test]
    fn a_state_s_file_paths_pass_the_detectors() {
        let mut r = redactor("[[custom]]\nname = \"customer\"\npattern = \"CUST-[0-9]{6}\"\n");
        let mut state = State::default();
        state.files.insert(
            "notes/CUST-123456.txt".into(),
            worldline_case::world::state::FileData::Text("for CUST-123456".into()),
        );
        r.state(&mut state);
        let shown = serde_json::to_string(&state).unwrap();
        assert!(!shown.contains("123456"), "{shown}");
        assert_eq!(state.files.len(), 1);
    }

    #[test]
    fn equal_values_share_a_placeholder_and_different_ones_do_not() {
        let mut r = redactor("");
        let a = r.text("from ana@example.com to bo@example.com");
        let b = r.text("again ana@example.com");
        let ana = &b["again ".len()..];
        assert!(
            ana.starts_with("<email:") && ana.len() == "<email:1234>".len(),
            "{b}"
        );
        assert!(a.starts_with(&format!("from {ana} to <email:")), "{a}");
        assert!(!a.ends_with(ana), "{a}");
        assert_eq!(r.hidden(), 2);
    }

    #[test]
    fn paths_hide_whole_values_and_detectors_every_string() {
        let mut r = redactor(
            "paths = [\"request.args.name\", \"request.args.items.*.sku\"]\ndetectors = [\"email\"]\n[[custom]]\nname = \"customer\"\npattern = \"CUST-[0-9]{6}\"\n",
        );
        let mut v = json!({"args": {"name": "Ana Lopez", "items": [{"sku": 12}], "note": "CUST-004211 wrote ana@example.com", "phone": "+44 20 7946 0958"}});
        r.value("request", &mut v);
        let args = &v["args"];
        assert!(args["name"].as_str().unwrap().starts_with("<redacted:"));
        assert!(
            args["items"][0]["sku"]
                .as_str()
                .unwrap()
                .starts_with("<redacted:")
        );
        let note = args["note"].as_str().unwrap();
        assert!(
            note.starts_with("<customer:") && note.contains(" wrote <email:"),
            "{note}"
        );
        assert_eq!(
            args["phone"], "+44 20 7946 0958",
            "only the detectors named run"
        );
    }

    /// A path naming a whole table, every table, or a write whole hides
    /// every value under it and keeps the shape its readers read back:
    /// `state.T` panicked every reader (and the UI's server), and
    /// `writes` left every write raw.
    #[test]
    fn a_path_naming_a_table_or_a_write_whole_hides_each_value_under_it() {
        for policy in ["state", "state.tickets", "state.*", "state.tickets.*"] {
            let mut r = redactor(&format!("paths = [\"{policy}\"]\ndetectors = []\n"));
            let mut state = State::default();
            state.tables.insert(
                "tickets".into(),
                worldline_case::world::state::Table {
                    rows: [("T-2".to_string(), json!({"title": "SecretTitle99"}))]
                        .into_iter()
                        .collect(),
                    ..Default::default()
                },
            );
            r.state(&mut state);
            let shown = serde_json::to_string(&state).unwrap();
            assert!(!shown.contains("SecretTitle99"), "{policy}: {shown}");
            assert!(
                shown.contains("T-2"),
                "{policy}: the row's key kept: {shown}"
            );
        }
        for policy in ["writes", "writes.*", "writes.0", "writes.*.*"] {
            let hides: &[&str] = match policy {
                "writes.0" => &["SecretTitle99", "T-2"],
                _ => &["SecretTitle99", "SecretFile98", "T-2", "notes.txt"],
            };
            let mut r = redactor(&format!("paths = [\"{policy}\"]\ndetectors = []\n"));
            let mut e: Event = serde_json::from_value(json!({
                "call": "worldline:agent/tools.call", "effect": "write", "fuel": 0,
                "request": {}, "response": {}, "seq": 4, "vtime_ns": 0,
                "writes": [{"op": "put", "table": "tickets", "key": "T-2",
                            "row": {"title": "SecretTitle99"}},
                           {"op": "file", "path": "notes.txt", "data": "SecretFile98"}],
            }))
            .unwrap();
            r.event(&mut e);
            let shown = serde_json::to_string(&e).unwrap();
            for secret in hides {
                assert!(!shown.contains(secret), "{policy}: {shown}");
            }
            assert!(shown.contains(r#""op":"put""#), "{policy}: {shown}");
        }
        let refused = Policy::parse(Path::new("redact.toml"), "paths = [\"writes.*.op\"]\n");
        let message = refused.err().unwrap().to_string();
        assert!(
            message.contains("redact.toml:1:") && message.contains("`op`"),
            "{message}"
        );
    }

    /// A native agent's `[env] vars` and `--model-set` values in a header
    /// pass the detectors (they were shown raw by `history --json` and
    /// kept raw in `export --redacted`).
    #[test]
    fn a_header_s_env_values_and_model_overrides_pass_the_detectors() {
        let mut r = redactor("detectors = [\"api_key\"]\n");
        let mut h: Header = serde_json::from_value(json!({
            "agent_sha256": "", "case": "c", "case_hash": "", "engine_hash": "",
            "format": "worldline.bundle.v1", "harness_version": "", "seed": 1,
            "world": "demo@v1", "world_hash": "", "clock": "",
            "env": {"vars": {"VENDOR_KEY": "sk-ZQenvKEY1234567890abcdefXYZ"}},
            "model_overrides": {"api_base_token": "sk-ZQsetKEY1234567890abcdefXYZ"},
        }))
        .unwrap();
        r.header(&mut h);
        let shown = serde_json::to_string(&h).unwrap();
        assert!(
            !shown.contains("ZQenvKEY") && !shown.contains("ZQsetKEY"),
            "{shown}"
        );
        assert!(shown.contains("VENDOR_KEY"), "{shown}");
    }

    /// A `request.args` path hides the argument in the model's reply that
    /// asks for the call (it came before the call, and was shown whole).
    #[test]
    fn a_request_args_path_hides_the_argument_a_model_reply_asks_for() {
        let mut r = redactor("paths = [\"request.args.reason\"]\ndetectors = []\n");
        let mut e: Event = serde_json::from_value(json!({
            "call": "worldline:agent/model.complete", "effect": "read", "fuel": 0,
            "request": {}, "seq": 5, "vtime_ns": 0,
            "response": {"ok": {"choices": [{"index": 0, "message": {"role": "assistant",
                "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "rollback_deploy",
                    "arguments": "{\"id\":\"D-42\",\"reason\":\"SecretReason77\"}"}}]}}]}},
        }))
        .unwrap();
        r.event(&mut e);
        let shown = serde_json::to_string(&e).unwrap();
        assert!(!shown.contains("SecretReason77"), "{shown}");
        assert!(
            shown.contains("D-42") && shown.contains("<redacted:"),
            "{shown}"
        );
        // And wherever the run quotes it after.
        assert!(
            !r.text("the reason was SecretReason77")
                .contains("SecretReason77")
        );
    }

    /// A row an event writes is put through the `state` paths: a fork's
    /// `--set` value was raw in its event's writes (`show`, `diff`,
    /// `export --redacted`, the UI), hidden in the state after it.
    #[test]
    fn a_row_an_event_writes_is_hidden_as_the_state_is() {
        let mut r = redactor("paths = [\"state.tickets.*.title\"]\ndetectors = []\n");
        let mut e: Event = serde_json::from_value(json!({
            "call": "worldline:fork/edit", "effect": "write", "fuel": 0,
            "request": {}, "response": {}, "seq": 4, "vtime_ns": 0,
            "writes": [{"op": "put", "table": "tickets", "key": "T-2",
                        "row": {"id": "T-2", "title": "SecretTitle99", "status": "open"}}],
        }))
        .unwrap();
        r.event(&mut e);
        let shown = serde_json::to_string(&e).unwrap();
        assert!(!shown.contains("SecretTitle99"), "{shown}");
        assert!(shown.contains(r#""status":"open""#), "{shown}");
        let mut state = json!({"tickets": {"T-2": {"title": "SecretTitle99"}}});
        r.value("state", &mut state);
        assert!(
            shown.contains(state["tickets"]["T-2"]["title"].as_str().unwrap()),
            "one placeholder: {shown}"
        );
    }

    /// A value a path hid is hidden where the view quotes it again (a
    /// grade's check, a replay's divergence), with the same placeholder.
    #[test]
    fn a_value_a_path_hid_is_hidden_where_it_is_quoted_again() {
        let mut r =
            redactor("paths = [\"output.cause_deploy\", \"request.args.text\"]\ndetectors = []\n");
        let out = r.output(r#"{"action":"rolled_back","cause_deploy":"D-42"}"#);
        let shown: Value = serde_json::from_str(&out).unwrap();
        let placeholder = shown["cause_deploy"].as_str().unwrap().to_string();
        assert!(placeholder.starts_with("<redacted:"), "{out}");
        let mut grade =
            json!({"checks": [{"path": "cause_deploy", "actual": "D-42", "expected": "D-42"}]});
        r.json(&mut grade);
        assert_eq!(
            grade["checks"][0]["actual"],
            placeholder.as_str(),
            "{grade}"
        );
        assert_eq!(grade["checks"][0]["path"], "cause_deploy");
        let mut side = json!({"args": {"text": "the note"}});
        r.divergence(Some("request"), &mut side);
        assert!(
            side["args"]["text"]
                .as_str()
                .unwrap()
                .starts_with("<redacted:"),
            "{side}"
        );
        let mut event = json!({"call": "c", "request": {"args": {"text": "again"}}});
        r.divergence(None, &mut event);
        assert!(
            event["request"]["args"]["text"]
                .as_str()
                .unwrap()
                .starts_with("<redacted:")
        );
    }

    /// A store's policy that does not read is refused, not passed over as
    /// none (every view then showed every value raw).
    #[test]
    fn a_policy_that_does_not_read_is_refused() {
        let dir = std::env::temp_dir().join(format!("wl-redact-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(for_store(&dir, None, false).unwrap().is_none());
        std::os::unix::fs::symlink(dir.join("nowhere.toml"), dir.join(FILE)).unwrap();
        let e = for_store(&dir, None, false).err().unwrap().to_string();
        assert!(e.contains("but a link to nothing, not a file"), "{e}");
        std::fs::remove_file(dir.join(FILE)).unwrap();
        std::fs::create_dir(dir.join(FILE)).unwrap();
        let e = for_store(&dir, None, false).err().unwrap().to_string();
        assert!(e.contains("but a folder, not a file"), "{e}");
        assert!(for_store(&dir, None, true).unwrap().is_none());
        // A FIFO is said as one (it was said to be a link or a folder).
        std::fs::remove_dir(dir.join(FILE)).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join(FILE))
            .status();
        assert!(made.unwrap().success());
        let e = for_store(&dir, None, false).err().unwrap().to_string();
        assert!(e.contains("but a FIFO, not a file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A policy file that is not UTF-8 is said at the line and column of
    /// its first bad byte, as a case is (it had no place).
    #[test]
    fn a_policy_that_is_not_utf8_is_said_at_its_line() {
        let dir = std::env::temp_dir().join(format!("wl-redact-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("redact.toml");
        std::fs::write(&file, b"[[paths]]\npath = \"request.args.\xff\"\n").unwrap();
        let e = Policy::load(&file).err().unwrap().to_string();
        assert!(e.contains("redact.toml:2:22: not UTF-8 text"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A value a path hid is hidden where later text of the view quotes
    /// it: a tool's answer the next model call carries in a message's
    /// content (a JSON text), an argument in its reply (`history` showed
    /// the tool event's placeholder and the model event's raw value).
    #[test]
    fn a_value_a_path_hid_is_hidden_where_a_model_message_quotes_it() {
        let mut r = redactor("paths = [\"response.ok.author\"]\ndetectors = []\n");
        let event = |call: &str, request: Value, response: Value| -> Event {
            serde_json::from_value(json!({
                "call": call, "effect": "read", "fuel": 0, "request": request,
                "response": response, "seq": 0, "vtime_ns": 0
            }))
            .unwrap()
        };
        let mut tool = event(
            "worldline:agent/tools.call",
            json!({"name": "get_deploy", "args": {"id": "D-42"}}),
            json!({"ok": {"author": "mira-zq81-authr", "id": "D-42"}}),
        );
        r.event(&mut tool);
        assert!(!serde_json::to_string(&tool).unwrap().contains("zq81"));
        let mut model = event(
            "worldline:agent/model.complete",
            json!({"messages": [{"role": "tool", "content": "{\"author\":\"mira-zq81-authr\",\"id\":\"D-42\"}"}]}),
            json!({"ok": {"content": "mira-zq81-authr wrote D-42"}}),
        );
        r.event(&mut model);
        let shown = serde_json::to_string(&model).unwrap();
        assert!(!shown.contains("zq81"), "{shown}");
        assert!(shown.contains("D-42"), "{shown}");
        // Written by Python's `json.dumps`, what is not ASCII escaped: the
        // value was shown in that form.
        let mut tool = event(
            "worldline:agent/tools.call",
            json!({"name": "get_deploy", "args": {"id": "D-43"}}),
            json!({"ok": {"author": "Grüße-geheim-42", "id": "D-43"}}),
        );
        r.event(&mut tool);
        let mut model = event(
            "worldline:agent/model.complete",
            json!({"messages": [{"role": "tool", "content": "{\"author\": \"Gr\\u00fc\\u00dfe-geheim-42\"}"}]}),
            json!({"ok": {"content": "ok"}}),
        );
        r.event(&mut model);
        let shown = serde_json::to_string(&model).unwrap();
        assert!(!shown.contains("geheim"), "{shown}");
    }

    /// A value a `state` path hides is hidden where a grade quotes it (its
    /// state diff, a check's actual value), though the view shows no state
    /// (`export --redacted`'s grade showed it); the grade's verdicts stay.
    #[test]
    fn a_value_a_state_path_hides_is_hidden_in_the_grade() {
        let mut r = redactor(
            "paths = [\"state.customers.*.ssn\", \"state.reservations.*.passengers.*.dob\"]\ndetectors = []\n",
        );
        let grade = json!({
            "passed": true,
            "reward": 1.0,
            "assertions": [{"what": "customers C-1 ssn", "actual": "078-05-1120", "expected": "078-05-1120", "passed": true}],
            "diff": {"tables": {
                "customers": {"added": {"C-1": {"id": "C-1", "ssn": "078-05-1120"}}},
                "reservations": {"changed": {"R-1": {"passengers[1].dob": {"before": "1990-01-01", "after": "1991-02-02"}}}}
            }}
        });
        let mut f: Footer = serde_json::from_value(json!({
            "chain_hash": "", "events": 0, "final_state_hash": "", "fuel": 0, "hash": "",
            "output": null, "replayable": true, "status": "completed", "stderr": "", "stdout": "",
            "grade": grade
        }))
        .unwrap();
        r.footer(&mut f);
        let shown = serde_json::to_string(&f.grade).unwrap();
        for secret in ["078-05-1120", "1990-01-01", "1991-02-02"] {
            assert!(!shown.contains(secret), "{secret}: {shown}");
        }
        let g = f.grade.unwrap();
        assert_eq!(
            (&g["passed"], &g["assertions"][0]["passed"]),
            (&json!(true), &json!(true))
        );
        assert_eq!(
            g["diff"]["tables"]["customers"]["added"]["C-1"]["id"],
            "C-1"
        );
        // A field the run did not change, and a value a `where` compares.
        let mut r = redactor(
            "paths = [\"state.tickets.*.pager_pin\", \"state.deploys.*.author\"]\ndetectors = []\n",
        );
        let mut f: Footer = serde_json::from_value(json!({
            "chain_hash": "", "events": 0, "final_state_hash": "", "fuel": 0, "hash": "",
            "output": null, "replayable": true, "status": "completed", "stderr": "", "stdout": "",
            "grade": {"passed": false, "assertions": [
                {"what": "tickets/T-99.pager_pin equals", "actual": "PIN-88213377", "expected": "PIN-00000000", "passed": false},
                {"what": "count deploys where {\"author\":\"mira-zq81-authr\"}", "actual": 1, "expected": 5, "passed": false}
            ]}
        }))
        .unwrap();
        r.footer(&mut f);
        let shown = serde_json::to_string(&f.grade).unwrap();
        for secret in ["PIN-88213377", "PIN-00000000", "zq81"] {
            assert!(!shown.contains(secret), "{secret}: {shown}");
        }
        assert!(shown.contains("count deploys where"), "{shown}");
    }

    #[test]
    fn a_bad_policy_names_its_line() {
        let e = Policy::parse(Path::new("r.toml"), "detectors = [\"email\", \"ssn\"]\n")
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("r.toml:1:"), "{e}");
        assert!(e.to_string().contains("unknown detector `ssn`"), "{e}");
        let e = Policy::parse(
            Path::new("r.toml"),
            "[[custom]]\nname = \"x\"\npattern = \"(\"\n",
        )
        .err()
        .unwrap();
        assert!(e.to_string().starts_with("r.toml:3:"), "{e}");
        // One line, saying what is wrong (regex draws the pattern over
        // four).
        let e = Policy::parse(
            Path::new("r.toml"),
            "[[custom]]\nname = \"x\"\npattern = \"[[[[\"\n",
        )
        .err()
        .unwrap();
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
        assert!(
            e.to_string()
                .ends_with("not a regular expression: unclosed character class"),
            "{e}"
        );
    }

    /// A path or pattern that would hide nothing, or everything, is
    /// refused at its line: a misspelt root hid nothing and was accepted
    /// (the values it was written to hide were shown), and a pattern that
    /// matches empty text put a placeholder between every character.
    #[test]
    fn a_path_no_run_holds_or_a_pattern_matching_nothing_is_refused_at_its_line() {
        let err = |text: &str| {
            Policy::parse(Path::new("r.toml"), text)
                .err()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            err("detectors = []\npaths = [\"request.args.id\",\n  \"reqest.args.id\"]\n"),
            "r.toml:3:3: path `reqest.args.id` starts with `reqest`, which no run holds: start it with request, response, writes, state, output"
        );
        assert_eq!(
            err("paths = [\"\"]\n"),
            "r.toml:1:10: path `` has an empty part: write dotted keys, `*` for any key or index"
        );
        assert!(err("paths = [\"state..x\"]\n").contains("has an empty part"));
        assert_eq!(
            err("[[custom]]\nname = \"x\"\npattern = \"a*\"\n"),
            "r.toml:3:11: custom `x`: the pattern matches empty text, which would put a placeholder between every character: make it match at least one character (`a+` for `a*`)"
        );
        for fine in [
            "paths = [\"state\", \"output.*\", \"writes.t.*.f\"]\n",
            "[[custom]]\nname = \"x\"\npattern = \"a+\"\n",
        ] {
            assert!(Policy::parse(Path::new("r.toml"), fine).is_ok(), "{fine}");
        }
    }

    /// A long run's model calls, each sending the whole conversation: its
    /// messages carry what the tools answered (an address per customer,
    /// the first ones asked again and again; a phone, a key, a ticket),
    /// the prompt names an owner whom a tool's answer first shows at call
    /// 20 (a `response.ok.owner` path hides it there, and so in every
    /// message before; hidden, the digits after it read as a card), and
    /// the agent names each tool message.
    fn long_run(calls: usize) -> HeldBundle {
        let model = |seq: u64, messages: &[Value], id: &str| -> Event {
            serde_json::from_value(json!({
                "call": "worldline:agent/model.complete", "effect": "read", "fuel": 0,
                "seq": seq, "vtime_ns": seq,
                "request": {"request": {"model": "m", "messages": messages,
                    "tools": [{"type": "function", "function": {"name": "get_customer"}}]}},
                "response": {"ok": {"choices": [{"index": 0, "message": {"role": "assistant",
                    "content": null, "tool_calls": [{"id": format!("c{seq}"), "type": "function",
                    "function": {"name": "get_customer",
                        "arguments": format!("{{\"id\":\"{id}\"}}")}}]}}]}},
            }))
            .unwrap()
        };
        let mut messages = vec![json!({"role": "user",
            "content": "Ask about Mira Quellhorst4111111111111111; start with get_customer-3, write to ops@example.com"})];
        let mut events = Vec::new();
        for call in 0..calls {
            let seq = events.len() as u64;
            // Customers 0 to 4 come back again and again; the rest once.
            let id = format!("C-{}", if call % 3 == 0 { call % 5 } else { call });
            events.push(model(seq, &messages, &id));
            let mut answer = json!({"id": id, "email": format!("user{}@example.com", &id[2..]),
                "note": format!("TCK-{:04} call +44 20 7946 {:04}", call % 7, call % 11)});
            if call == 20 {
                answer["owner"] = json!("Mira Quellhorst");
            }
            if call % 9 == 4 {
                answer["key"] = json!(format!("sk-proj-abcdefghijklmnop{call:04}"));
            }
            events.push(
                serde_json::from_value(json!({
                    "call": "worldline:agent/tools.call", "effect": "read", "fuel": 0,
                    "seq": seq + 1, "vtime_ns": seq + 1,
                    "request": {"name": "get_customer", "args": {"id": id}},
                    "response": {"ok": answer},
                }))
                .unwrap(),
            );
            messages.push(events[seq as usize].response["ok"]["choices"][0]["message"].clone());
            messages.push(
                json!({"role": "tool", "name": format!("get_customer-{}", call % 4),
                "tool_call_id": format!("c{seq}"), "content": canon::to_string(&answer)}),
            );
        }
        let header: Header = serde_json::from_value(json!({
            "agent_sha256": "", "case": "long", "case_hash": "", "engine_hash": "",
            "format": "worldline.bundle.v1", "harness_version": "", "seed": 1,
            "world": "demo@v1", "world_hash": "", "clock": "",
        }))
        .unwrap();
        let footer: Footer = serde_json::from_value(json!({
            "chain_hash": "", "events": events.len(), "final_state_hash": "", "fuel": 0,
            "hash": "", "output": "{\"owner\":\"Mira Quellhorst\",\"mail\":\"user3@example.com\"}",
            "replayable": true, "status": "completed", "stderr": "", "stdout": "",
        }))
        .unwrap();
        let held = crate::log::Held::of(&events);
        assert!(
            (0..events.len() as u64).any(|seq| held.extends(seq).is_some()),
            "the model calls are held compact"
        );
        HeldBundle {
            header,
            events: held,
            footer: Some(footer),
            in_flight: None,
            chain: crate::log::Chain::Lines,
        }
    }

    /// The policies the long run is redacted under: the built-in
    /// detectors alone; paths that hide a tool's answer and argument (so
    /// the messages that quote them), a message's name by its place in
    /// the whole conversation (the prompt quotes it) and every message's
    /// call id, with a custom detector; and a path that hides each chat
    /// request whole.
    const LONG_POLICIES: [&str; 3] = [
        "",
        "paths = [\"response.ok.owner\", \"request.args.id\", \"request.request.messages.8.name\", \"request.request.messages.*.tool_call_id\"]\n[[custom]]\nname = \"ticket\"\npattern = \"TCK-[0-9]{4}\"\n",
        "paths = [\"request.request\", \"response.ok.owner\"]\n",
    ];

    /// Everything a view of a whole run shows, as text: what it learnt
    /// of the whole run (each value's placeholder, the values paths hid
    /// in the order they were found), the redacted bundle's lines
    /// (`history`, the UI's run page), the redacted copy (`export
    /// --redacted`), each of the events `at` alone after what comes
    /// before it (`show --at`, a replay's divergence), and how many
    /// values each hid.
    fn views(r: &Redactor, b: &HeldBundle, at: &[u64]) -> Vec<String> {
        let copy_of = |b: &HeldBundle| HeldBundle {
            header: b.header.clone(),
            events: b.events.clone(),
            footer: b.footer.clone(),
            in_flight: None,
            chain: b.chain,
        };
        let mut learnt = r.clone();
        learnt.whole(&b.header, &mut b.events.clone(), b.footer.as_ref());
        // Two runs learnt side by side (`diff`): the second's events
        // learnt held after the first's whole.
        let mut side = r.clone();
        side.learn(b.events.whole().iter());
        side.learn_held(&mut b.events.clone());
        let mut held = copy_of(b);
        let mut whole = r.clone();
        whole.held(&mut held);
        let mut copied = copy_of(b);
        let mut copier = r.clone();
        let copy = copy::of("run-1", &mut copied, None, &mut copier);
        let mut out = vec![
            format!("{:?}", learnt.given),
            format!("{:?}", learnt.quoted),
            format!("{:?} {:?}", side.given, side.quoted),
            crate::log::bundle::held_to_text(&held),
            whole.hidden().to_string(),
            crate::log::bundle::held_to_text(&copy),
            copier.hidden().to_string(),
        ];
        for &at in at {
            let mut before = r.clone();
            let mut events = b.events.clone();
            before.before(&b.header, &mut events, at);
            let mut event = events.event(at).unwrap().into_owned();
            before.event(&mut event);
            out.push(serde_json::to_string(&event).unwrap());
            out.push(before.hidden().to_string());
        }
        out
    }

    /// A long run's redacted views are byte for byte what they were when
    /// every model call was put back whole, learnt and scanned again
    /// (decision 0426): the same placeholders, the same values hidden,
    /// an address the first calls showed hidden in every later message
    /// that repeats it, and an owner a later answer hides hidden in the
    /// prompt every earlier call sent.
    #[test]
    fn a_long_run_s_views_are_the_same_learnt_from_what_each_call_appended() {
        let b = long_run(30);
        for policy in LONG_POLICIES {
            let mut plain = redactor(policy);
            plain.plain = true;
            let at = [7, 43];
            let (was, is) = (views(&plain, &b, &at), views(&redactor(policy), &b, &at));
            for (i, (was, is)) in was.iter().zip(&is).enumerate() {
                assert!(was == is, "{policy:?}, view {i}: {was}\n{is}");
            }
            let shown = &is[3];
            for secret in ["ops@example.com", "user1@example.com", "7946", "sk-proj"] {
                assert!(!shown.contains(secret), "{policy:?}: {secret}");
            }
            assert_eq!(
                shown.contains("Quellhorst"),
                !policy.contains("owner"),
                "{policy:?}"
            );
            if policy.contains("messages.8") {
                assert!(!shown.contains("TCK-"), "{policy:?}");
                assert!(!shown.contains("get_customer-3"), "{policy:?}");
                assert!(shown.contains("get_customer-2"), "{policy:?}");
            }
        }
    }

    /// The detectors read a long run's text once, not once per model call
    /// that sends it again: twice the calls, about twice the bytes read
    /// (about four times when each call's whole conversation was read).
    #[test]
    fn the_detectors_read_a_long_run_once() {
        let scanned = |calls: usize, plain: bool| {
            let mut r = redactor(LONG_POLICIES[1]);
            r.plain = plain;
            r.held(&mut long_run(calls));
            r.scanned
        };
        let (short, long) = (scanned(100, false), scanned(200, false));
        assert!(
            long < short * 5 / 2,
            "{short} bytes at 100 calls, {long} at 200"
        );
        let (short, long) = (scanned(100, true), scanned(200, true));
        assert!(
            long > short * 7 / 2,
            "plain: {short} bytes at 100 calls, {long} at 200"
        );
    }

    /// A redacted copy of a long run (`export --redacted`) reads each
    /// call's text once, as the views do: twice the calls, about twice the
    /// bytes read (about four times when each call's whole conversation
    /// was put back, redacted and recorded anew), and the copy is byte
    /// for byte the one made so, under a policy of detectors and paths.
    #[test]
    fn a_long_run_s_redacted_copy_reads_each_call_s_text_once() {
        // The bytes the copy reads once the run is learnt (learning it
        // is the views' too).
        let copied = |calls: usize, plain: bool| {
            let mut r = redactor(LONG_POLICIES[1]);
            r.plain = plain;
            let mut b = long_run(calls);
            let mut learnt = r.clone();
            learnt.whole(&b.header, &mut b.events, b.footer.as_ref());
            let copy = copy::of("run-1", &mut b, None, &mut r);
            (
                crate::log::bundle::held_to_text(&copy),
                r.read - learnt.read,
            )
        };
        let ((short, read_short), (long, read_long)) = (copied(100, false), copied(200, false));
        assert!(
            read_long < read_short * 5 / 2,
            "{read_short} bytes at 100 calls, {read_long} at 200"
        );
        assert_eq!(short, copied(100, true).0, "100 calls");
        assert_eq!(long, copied(200, true).0, "200 calls");
    }
}
