//! Bundle files: `{"header":{...}}`, then one event per line, then
//! `{"footer":{...}}`. A bundle without a footer is an incomplete run (the
//! process died); its events are still readable and verifiable.

use super::delta::{self, Chain, Held};
use super::event::Event;
use super::fold::{self, Folds};
use super::intent::{self, Intent};
use super::recorder::{CHAIN_START, chain_hash, chain_hash_of_parts, chain_hash_of_text};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use worldline_case::canon;

pub const FORMAT: &str = "worldline-bundle/1";

/// Where a fork came from, and what it changed at its fork point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parent {
    /// The parent run's id.
    pub run: String,
    /// The parent's chain hash, so the parent is identified even if renamed.
    pub chain_hash: String,
    /// The event the fork diverges at: earlier events are the parent's.
    pub event: u64,
    pub edits: Vec<Edit>,
    /// Fork points of the ancestors before `event` (a fork of a fork
    /// replays them too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<ForkPoint>,
    /// A resume (`worldline resume`): the run goes on from where its
    /// parent's recording ends (`event`), with no edits.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resumed: bool,
    /// A resume of a run killed inside a call: that call's intent
    /// (`intent.rs`), the call made again at `event`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<Intent>,
    /// A call its edits answer (`--respond`) or deny (`--deny`) still
    /// counts toward the case's `[[inject]] nth` and the fuzz faults'
    /// draws, as it did in the parent, so only the edit differs (decision
    /// 0422). False in forks made before, which replay as they ran.
    #[serde(default, skip_serializing_if = "is_false")]
    pub counted: bool,
}

fn is_false(b: &bool) -> bool {
    !b
}

/// Edits made at one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkPoint {
    pub event: u64,
    pub edits: Vec<Edit>,
    /// As [`Parent::counted`], for this fork point's edits.
    #[serde(default, skip_serializing_if = "is_false")]
    pub counted: bool,
}

impl Parent {
    /// Every fork point of this run's lineage, oldest first.
    pub fn fork_points(&self) -> Vec<ForkPoint> {
        let mut all = self.earlier.clone();
        all.push(ForkPoint {
            event: self.event,
            edits: self.edits.clone(),
            counted: self.counted,
        });
        all
    }
}

/// A change a fork makes at its fork point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case")]
pub enum Edit {
    /// Answer the event with this response instead.
    Respond { response: Value },
    /// Allow a tool (name or glob) from here on.
    Allow { tool: String },
    /// Deny a tool (name or glob) from here on.
    Deny { tool: String },
    /// Set a row (`table/key`) or a field (`table/key.field`) of the state.
    Set { path: String, value: Value },
    /// Draw the model's alternatives from this seed from here on (a
    /// branch of `fork --samples`).
    Reseed { model_seed: u64 },
}

/// A run's place in a group of rollouts (`test --group K`, `fork
/// --samples K`): the members differ only in their model seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The group's id: the run id of its first member (absent in that
    /// member's own header, whose run id it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// This run's index in the group, from 0.
    pub member: u64,
    /// How many members the group was started with.
    pub size: u64,
}

/// The longest `episode_id` a served episode records, in bytes.
pub const EPISODE_ID_MAX: usize = 256;

/// What a run was: enough to find and re-execute it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub agent_sha256: String,
    pub case: String,
    pub case_hash: String,
    pub engine_hash: String,
    /// A native process's environment beyond worldline's own variables:
    /// the case's `[env] vars` it was given and the passed-through
    /// variables by name and hash. Absent for a WebAssembly agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<ProcessEnv>,
    /// A `worldline serve` episode: the `episode_id` its client's `reset`
    /// gave (at most [`EPISODE_ID_MAX`] bytes), so a trainer finds its
    /// episode's run. Absent when it gave none, and in a run of any other
    /// kind, a fork of an episode by `worldline fork` included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_id: Option<String>,
    pub format: String,
    /// A fuzz run: the profile its faults were drawn from (with `seed`), or
    /// the schedule it ran with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuzz: Option<worldline_case::case::fuzz::FaultSource>,
    /// A member of a group of rollouts (`test --group`, `fork --samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Group>,
    pub harness_version: String,
    /// `"native"` for an agent outside the sandbox (`worldline mcp`,
    /// `--exec`): its boundary is recorded and replayed, not its inside.
    /// Absent for a WebAssembly agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// Limits `resume` raised (`fuel`, `max_steps`, `max_events`,
    /// `max_errors`): the case's `[limits]` with these applied is what the
    /// run ran under, and what its replay runs under.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, u64>,
    /// `--model-set KEY=VALUE` overrides of the case's `[model]`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub model_overrides: BTreeMap<String, String>,
    /// The model's seed when it is not derived from `seed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_seed: Option<u64>,
    /// A native agent: how it reached the world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<NativeAgent>,
    /// The case's `[origin]`: the run it was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<worldline_case::case::origin::Origin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Parent>,
    /// Set in a redacted copy (`export --redacted`): never the original.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<Redacted>,
    /// The rules the run ran under (`rules.rs`, decision 0423); absent in
    /// a run recorded before there were rules (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<u32>,
    pub seed: u64,
    /// `--user-model-set KEY=VALUE` overrides of a model-played user's
    /// `[user.model]`: with them a model played the user rather than its
    /// scripted stand-in (decision 0386).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_model_overrides: BTreeMap<String, String>,
    pub world: String,
    pub world_hash: String,
}

/// How a native agent reached the world (`isolation = "native"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NativeAgent {
    /// `"exec"` (a process worldline started), `"mcp-stdio"` or
    /// `"mcp-http"` (an MCP client that connected).
    pub transport: String,
    /// The process's command and arguments (`exec`; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Variables passed through besides the fixed ones (`--pass-env`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// Where the output was read from instead of stdout (`--output-file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_file: Option<std::path::PathBuf>,
    /// What kept a process's network to the world (`exec`): `"proxy"`
    /// (the proxy variables alone) or `"isolated"` (`--isolate-net`: a
    /// network namespace of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
}

/// What a native process got of its environment that the case and the
/// command do not fix: recorded so that a replay meeting other values
/// says which names differ.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessEnv {
    /// The case's `[env] vars`, as the process got them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<String, String>,
    /// Each variable passed through from worldline's environment that was
    /// set: its name and the SHA-256 of its value (never the value).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passed: BTreeMap<String, String>,
}

/// What a redacted copy of a run is a copy of. Its events carry
/// placeholders and are chained anew, so the copy verifies by itself; the
/// original's chain hash says which run it was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Redacted {
    /// Values hidden (distinct ones).
    pub hidden: u64,
    /// The original run's id and chain hash.
    pub original_run: String,
    pub original_chain_hash: String,
    /// SHA-256 of the redaction policy's text.
    pub policy_sha256: String,
    /// The original run's case clock (RFC 3339), its virtual time 0: the
    /// case stays behind, and `otel` times a copy's spans from this as it
    /// times the run's. Absent when the case sets none (or in a copy made
    /// before copies carried it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// `run` returned `ok`.
    Completed,
    /// `run` returned `err` (the agent gave up and said why).
    Errored,
    /// The guest trapped (panic, stack overflow, bad call, event limit).
    Trapped,
    OutOfFuel,
    MemoryLimit,
    /// The wall-clock watchdog stopped it: not replayable.
    Timeout,
    /// The guest called `exit`.
    Exited,
    /// The run took `[limits] max_steps` steps and tried one more.
    StepLimit,
    /// The run got more than `[limits] max_errors` tool errors.
    ErrorLimit,
    /// The scripted model had no reply for the agent's request, or a
    /// `rerun --model fail` met a request its recording does not hold:
    /// the case's script or the recording ran out, not the agent (its own
    /// outcome and signature, never a failure of the agent's).
    Unscripted,
}

impl Status {
    /// Every status, in the order `as_str` lists them: what `runs --status`
    /// takes, and what `faulted` stands for, come from here.
    pub const ALL: [Status; 10] = [
        Status::Completed,
        Status::Errored,
        Status::Trapped,
        Status::OutOfFuel,
        Status::MemoryLimit,
        Status::Timeout,
        Status::Exited,
        Status::StepLimit,
        Status::ErrorLimit,
        Status::Unscripted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Errored => "errored",
            Status::Trapped => "trapped",
            Status::OutOfFuel => "out_of_fuel",
            Status::MemoryLimit => "memory_limit",
            Status::Timeout => "timeout",
            Status::Exited => "exited",
            Status::StepLimit => "step_limit",
            Status::ErrorLimit => "error_limit",
            Status::Unscripted => "unscripted",
        }
    }

    /// Whether the run's end says more than its grade (shown instead of
    /// `passed`/`failed`, and its signature): an agent fault, or a script
    /// that ran out.
    pub fn overrides_grade(self) -> bool {
        self.is_fault() || self == Status::Unscripted
    }

    /// A fault of the agent (exit code 3).
    pub fn is_fault(self) -> bool {
        matches!(
            self,
            Status::Trapped
                | Status::OutOfFuel
                | Status::MemoryLimit
                | Status::Timeout
                | Status::Exited
        )
    }
}

/// How a run ended and what it left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    /// Guest backtrace (function names, innermost first) for traps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backtrace: Vec<String>,
    pub chain_hash: String,
    /// Why the run stopped, for anything but `completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub events: u64,
    pub final_state_hash: String,
    pub fuel: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grade: Option<Value>,
    /// SHA-256 of the chain hash and this footer's canonical JSON without
    /// `hash`: the outcome cannot be edited unnoticed either.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hash: String,
    /// SHA-256 of the bundle's header line as written (without its
    /// newline), so the header cannot be edited unnoticed either: the
    /// chain starts from a constant, not from the header. Absent in
    /// bundles written before it, which are read as they always were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_hash: Option<String>,
    pub output: Option<String>,
    /// False when the outcome depended on real time (the watchdog).
    pub replayable: bool,
    pub status: Status,
    pub stderr: String,
    pub stdout: String,
    /// Why a served episode (`worldline serve`) ended without its client's
    /// `end` action: its connection closed or went idle, the server
    /// stopped, a `reset` began another episode. Left out otherwise, and
    /// in runs recorded before it (decision 0429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
    /// Bytes of stdout/stderr dropped past the limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated_bytes: u64,
}

impl Footer {
    /// Stopped from outside (a native run a signal to worldline ended):
    /// `trapped` and not replayable. Its outcome is the signal's, not the
    /// agent's, so a suite or campaign does not count it as a failure.
    pub fn stopped_from_outside(&self) -> bool {
        self.status == Status::Trapped && !self.replayable
    }

    /// The recorded grade's verdict (`passed`/`failed`), if the run was graded.
    pub fn verdict(&self) -> Option<&'static str> {
        let passed = self.grade.as_ref()?.get("passed")?.as_bool()?;
        Some(if passed { "passed" } else { "failed" })
    }

    /// A graded run's reward: the grade's (a weighted score), else 1 when
    /// it passed and 0 when not; none when ungraded.
    pub fn reward(&self) -> Option<f64> {
        let grade = self.grade.as_ref()?;
        let passed = self.verdict() == Some("passed");
        Some(
            grade["reward"]
                .as_f64()
                .unwrap_or(if passed { 1.0 } else { 0.0 }),
        )
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize, Deserialize)]
struct HeaderLine {
    header: Header,
}

#[derive(Serialize, Deserialize)]
struct FooterLine {
    footer: Footer,
}

/// A bundle's first line: its header, as written.
pub fn header_line(header: &Header) -> String {
    let mut line = canon::to_string(
        &serde_json::to_value(HeaderLine {
            header: header.clone(),
        })
        .expect("headers serialize"),
    );
    line.push('\n');
    line
}

/// The footer line of a bundle.
pub fn footer_line(footer: &Footer) -> String {
    /// The line as written: the footer borrowed, serialized once (its
    /// fields are declared in sorted order, so its text is canonical).
    #[derive(Serialize)]
    struct Line<'a> {
        footer: &'a Footer,
    }
    let mut line = canon::to_string(&Line { footer });
    line.push('\n');
    line
}

/// The most bytes a bundle's header line may take: its case's name, a
/// native agent's command and environment, a fuzz profile. A reader looks
/// no further for the first newline (a file of zeros read to the
/// bundle's cap of 1 GiB for it).
pub const HEADER_MAX: u64 = 64 * 1024 * 1024;

/// Whether the bundle at `path` has a whole header line. A bundle without
/// one was cut off before anything of its run was recorded (the process
/// was killed as it created the file, or the disk was full): an
/// incomplete run, not a damaged one. A file past the bundles' cap, or
/// whose first line runs past [`HEADER_MAX`], is no cut-off run: it is
/// said to have one, and read as a damaged bundle.
pub fn has_header(path: &Path) -> std::io::Result<bool> {
    let first = first_line(path)?;
    let len = std::fs::metadata(path)?.len();
    Ok(first.ends_with(b"\n")
        || first.len() as u64 >= HEADER_MAX
        || len > worldline_case::bounded::BUNDLE)
}

/// The bundle's first line, up to and with its newline (none when torn),
/// at most [`HEADER_MAX`] bytes of it.
fn first_line(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::BufRead as _;
    use std::io::Read as _;
    let mut first = Vec::new();
    let file = worldline_case::bounded::open(path).map_err(std::io::Error::other)?;
    std::io::BufReader::new(file.take(HEADER_MAX)).read_until(b'\n', &mut first)?;
    Ok(first)
}

/// Why the file at `path` is no run's bundle, when its first line says so
/// plainly: a `worldline export` document, or a line that is not (the
/// start of) a bundle's header (a case file named as a run). An empty
/// file, or a header cut short, is a bundle cut off as it was created.
pub fn not_a_bundle(path: &Path) -> Option<String> {
    let first = first_line(path).ok()?;
    if let Some(said) = an_export(&first) {
        return Some(said);
    }
    const HEAD: &[u8] = br#"{"header":"#;
    let start = &first[..first.len().min(HEAD.len())];
    (!first.is_empty() && !HEAD.starts_with(start)).then(|| {
        "is not a run's bundle (its first line is no bundle header): name a run by its id, or the bundle of one in a store's runs/ folder".to_string()
    })
}

/// Only the header of the bundle at `path` (its first line), for readers
/// that decide from it whether they need the rest.
pub fn read_header(path: &Path) -> Result<Header, BundleError> {
    let err = |message: String| BundleError {
        path: path.display().to_string(),
        line: 1,
        message,
    };
    let first = first_line(path).map_err(|e| err(format!("cannot read bundle: {e}")))?;
    if let Some(said) = an_export(&first) {
        return Err(err(said));
    }
    if !first.ends_with(b"\n") {
        return Err(err(
            "no header: the run was cut off as its bundle was created".into(),
        ));
    }
    let line: HeaderLine =
        serde_json::from_slice(&first).map_err(|e| err(format!("bad header: {e}")))?;
    Ok(line.header)
}

/// A whole bundle as the text a run writes (events as they are, hashes
/// included, model requests compact as the recorder writes them).
pub fn to_text(b: &Bundle) -> String {
    held_to_text(&HeldBundle {
        header: b.header.clone(),
        events: Held::of(&b.events),
        footer: b.footer.clone(),
        in_flight: b.in_flight.clone(),
        chain: b.chain,
    })
}

/// [`to_text`] of a bundle held compact (a redacted copy, decision 0380):
/// each line from what it holds.
pub fn held_to_text(b: &HeldBundle) -> String {
    let mut text = header_line(&b.header);
    let mut folds = Folds::default();
    for (i, e) in b.events.as_held().iter().enumerate() {
        text.push_str(&folds.offer(e, || {
            (b.events.line(i as u64, b.chain))
                .unwrap_or_else(|| serde_json::to_string(e).expect("events serialize"))
        }));
    }
    text.push_str(&folds.flush());
    if let Some(i) = &b.in_flight {
        text.push_str(&i.line());
    }
    if let Some(f) = &b.footer {
        text.push_str(&footer_line(f));
    }
    text
}

/// The footer's own hash (over the chain hash and its other fields).
pub fn footer_hash(footer: &Footer) -> String {
    // Without `hash`, which is left out when empty.
    let cleared;
    let bare = if footer.hash.is_empty() {
        footer
    } else {
        cleared = Footer {
            hash: String::new(),
            ..footer.clone()
        };
        &cleared
    };
    canon::hash_json_after(&format!("{}\n", footer.chain_hash), bare)
}

/// SHA-256 of a header line as written, without its newline.
pub(super) fn header_line_hash(line: &str) -> String {
    canon::sha256_hex(line.strip_suffix('\n').unwrap_or(line))
}

/// Set `footer`'s `header_hash` to `header`'s line, then its `hash` over
/// both: the footer then holds the header too.
pub fn seal(footer: &mut Footer, header: &Header) {
    footer.header_hash = Some(header_line_hash(&header_line(header)));
    // Cleared first, so the hash is taken without copying the footer.
    footer.hash = String::new();
    footer.hash = footer_hash(footer);
}

/// Whether the header line whose hash is `line_hash` is the one `footer`
/// holds, when it holds one.
pub(super) fn check_header(footer: Option<&Footer>, line_hash: &str) -> Result<(), String> {
    match footer.and_then(|f| f.header_hash.as_deref()) {
        Some(held) if held != line_hash => Err(
            "the header was changed after the run (its hash is not the one the footer holds)"
                .into(),
        ),
        _ => Ok(()),
    }
}

/// Append the footer (with its hash set): the run is complete. With
/// `sync`, flushed to disk at once (a real-time wait, made without the
/// run's CPU slot); without, the caller flushes many runs at once
/// (`durable::SyncBatch`, which takes the file back to start its
/// writeback).
pub fn finish(mut file: File, footer: &Footer, sync: bool) -> std::io::Result<File> {
    file.write_all(footer_line(footer).as_bytes())?;
    if sync {
        worldline_case::parallel::waiting(|| file.sync_all())?;
    }
    Ok(file)
}

/// A bundle as read back.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub header: Header,
    pub events: Vec<Event>,
    /// `None` when the run did not finish (killed, crashed).
    pub footer: Option<Footer>,
    /// The call a run without a footer was killed inside: its intent line
    /// with no event after it (`intent.rs`).
    pub in_flight: Option<Intent>,
    /// How its compact model calls were hashed (a replay hashes its own
    /// the same way, to the same chain).
    pub chain: Chain,
}

/// A bundle as read back with its model requests held compact (decision
/// 0380): for a follower (replay, fork, resume), which puts back one
/// request at a time.
#[derive(Debug)]
pub struct HeldBundle {
    pub header: Header,
    pub events: Held,
    pub footer: Option<Footer>,
    pub in_flight: Option<Intent>,
    pub chain: Chain,
}

impl From<Bundle> for HeldBundle {
    /// A bundle read or made whole, its events held compact.
    fn from(b: Bundle) -> Self {
        HeldBundle {
            header: b.header,
            events: Held::from_whole(b.events),
            footer: b.footer,
            in_flight: b.in_flight,
            chain: b.chain,
        }
    }
}

/// A problem reading or checking a bundle, with the line it is on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct BundleError {
    pub path: String,
    pub line: usize,
    pub message: String,
}

impl From<BundleError> for worldline_case::error::InputError {
    fn from(e: BundleError) -> Self {
        worldline_case::error::InputError::new(&e.path, e.message).with_line(e.line)
    }
}

/// Read a bundle and check its hash chain; the first broken link is an
/// error naming the event.
pub fn read(path: &Path) -> Result<Bundle, BundleError> {
    let (header, reader) = read_lines_of(path)?;
    Ok(reader.finish(header))
}

/// [`read`], its model requests held compact as the lines hold them.
pub fn read_held(path: &Path) -> Result<HeldBundle, BundleError> {
    let (header, reader) = read_lines_of(path)?;
    Ok(reader.finish_held(header))
}

/// [`read_held`], and how many bytes it read: all of them, and those
/// before the footer's line (all of them when there is no footer). A
/// reader of a bundle another process may still be writing (the run
/// index's) takes the size of what it read, not the file's a moment
/// before or after.
pub fn read_held_measured(path: &Path) -> Result<(HeldBundle, Measured), BundleError> {
    let bytes = bytes_of(path)?;
    let (header, reader) = read_lines(&bytes, path)?;
    let held = reader.finish_held(header);
    let read = bytes.len() as u64;
    // The footer is the last line (nothing may follow it), its newline
    // written with it or not yet.
    let before_footer = match held.footer {
        None => read,
        Some(_) => {
            let line = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            line.iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |end| end as u64 + 1)
        }
    };
    Ok((
        held,
        Measured {
            read,
            before_footer,
        },
    ))
}

/// How many bytes [`read_held_measured`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    pub read: u64,
    /// The bytes before the footer's line.
    pub before_footer: u64,
}

/// Read the bundle at `path` and check its lines.
pub(super) fn read_lines_of(path: &Path) -> Result<(Header, Reader<'_>), BundleError> {
    read_lines(&bytes_of(path)?, path)
}

/// [`read_bytes`], its error naming `path`.
fn bytes_of(path: &Path) -> Result<Vec<u8>, BundleError> {
    read_bytes(path).map_err(|(line, message)| BundleError {
        path: path.display().to_string(),
        line,
        message,
    })
}

/// The bytes of the bundle at `path`, at most the bundles' cap; its first
/// line is looked for no further than [`HEADER_MAX`], and the rest is not
/// read when it runs past (a file of zeros was read whole to find it).
fn read_bytes(path: &Path) -> Result<Vec<u8>, (usize, String)> {
    use std::io::{BufRead as _, Read as _};
    use worldline_case::bounded::{BUNDLE, Refused};
    let cannot = |e: Refused| (0, format!("cannot read bundle: {e}"));
    let file = worldline_case::bounded::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(|e| cannot(e.into()))?.len();
    if len > BUNDLE {
        return Err(cannot(Refused::TooLarge(BUNDLE)));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    let mut reader = std::io::BufReader::new(file.take(BUNDLE));
    (&mut reader)
        .take(HEADER_MAX)
        .read_until(b'\n', &mut bytes)
        .map_err(|e| cannot(e.into()))?;
    if !bytes.ends_with(b"\n") && bytes.len() as u64 >= HEADER_MAX {
        return Err((1, header_too_long()));
    }
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(e.into()))?;
    Ok(bytes)
}

/// What a first line past [`HEADER_MAX`] without an end is.
pub(super) fn header_too_long() -> String {
    format!(
        "its first line runs past {} without ending: no bundle's header is that long (the file is damaged)",
        worldline_case::bounded::size(HEADER_MAX)
    )
}

/// Check a bundle's bytes (`path` names it in errors).
pub fn parse(bytes: &[u8], path: &Path) -> Result<Bundle, BundleError> {
    let (header, reader) = read_lines(bytes, path)?;
    Ok(reader.finish(header))
}

/// [`parse`], its model requests held compact as the lines hold them
/// (decision 0380).
pub fn parse_held(bytes: &[u8], path: &Path) -> Result<HeldBundle, BundleError> {
    let (header, reader) = read_lines(bytes, path)?;
    Ok(reader.finish_held(header))
}

/// Check a bundle's bytes line by line: its header and what the lines
/// after it held.
fn read_lines<'a>(bytes: &[u8], path: &'a Path) -> Result<(Header, Reader<'a>), BundleError> {
    let err = |line: usize, message: String| BundleError {
        path: path.display().to_string(),
        line,
        message,
    };
    // A torn last line is dropped before decoding: a killed write can end
    // inside a UTF-8 character.
    let (whole, torn) = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) => bytes.split_at(end + 1),
        None => (bytes, &[][..]),
    };
    let text = std::str::from_utf8(whole).map_err(|e| {
        let line = 1 + whole[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        err(line, format!("not UTF-8: {e}"))
    })?;
    let mut lines = text.split_inclusive('\n').enumerate();
    let first = lines.next();
    if let Some(said) = first.and_then(|(_, line)| an_export(line.as_bytes())) {
        return Err(err(1, said));
    }
    let (header, line_hash) = match first {
        Some((_, first)) if first.ends_with('\n') => {
            (header_of(first, path)?, header_line_hash(first))
        }
        _ => {
            return Err(err(
                1,
                "no header: the run was cut off as its bundle was created (killed, or the disk was full); nothing of it was recorded".into(),
            ));
        }
    };
    let mut reader = Reader::new(path);
    let mut read = 1;
    for (i, line) in lines {
        if !line.ends_with('\n') {
            // A torn last line: the process died while writing it.
            break;
        }
        reader.line(i + 1, line)?;
        read = i + 1;
    }
    // Bytes after a finished run's footer were written by something else:
    // no run tears a line after its footer.
    if reader.footer.is_some() && !torn.is_empty() {
        return Err(err(read + 1, "data after the footer".into()));
    }
    if let Some(line) = unended_footer(torn) {
        reader.line(read + 1, line)?;
    }
    check_header(reader.footer.as_ref(), &line_hash).map_err(|m| err(1, m))?;
    Ok((header, reader))
}

/// The lines a run wrote after `events` (lines that ended with the
/// last of them), checked as [`parse`] checks a whole bundle, the chain
/// going on from `events`' last hash: every event, then the footer. A
/// fork server's parent reads its branches' continuations so (decision
/// 0358); `path` names them in errors, their line numbers counted from
/// the first of them.
pub fn continued(
    events: Held,
    lines: &[u8],
    path: &Path,
) -> Result<(Held, Option<Footer>), BundleError> {
    let text = std::str::from_utf8(lines).map_err(|e| BundleError {
        path: path.display().to_string(),
        line: 0,
        message: format!("not UTF-8: {e}"),
    })?;
    let mut reader = Reader::new(path);
    if let Some(last) = events.as_held().last() {
        reader.prev.clone_from(&last.hash);
    }
    reader.events = events;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if !line.ends_with('\n') {
            return Err(BundleError {
                path: path.display().to_string(),
                line: i + 1,
                message: "a torn last line".into(),
            });
        }
        reader.line(i + 1, line)?;
    }
    Ok((reader.events, reader.footer))
}

/// A last line that is a whole footer but for its newline (a copy or an
/// editor dropped it), read as the run's footer, whose hashes still check
/// it: a footer torn by a killed write is not JSON, and the run stays
/// incomplete.
pub(super) fn unended_footer(torn: &[u8]) -> Option<&str> {
    let line = std::str::from_utf8(torn).ok()?;
    let whole = |l: &str| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok();
    (line.starts_with("{\"footer\":") && whole(line)).then_some(line)
}

/// What to say of a file that is a `worldline export` document, not a
/// bundle (it was read as a run cut off before its header), or of one
/// that begins with a UTF-8 byte-order mark, which no bundle does (an
/// editor saved it: it was "bad header: expected value at line 1 column 1").
pub(super) fn an_export(first: &[u8]) -> Option<String> {
    if first.starts_with(b"\xEF\xBB\xBF") {
        return Some("begins with a UTF-8 byte-order mark, which no run's bundle has (an editor saved it): remove the mark, or take the bundle from the store or export it came from".to_string());
    }
    first.starts_with(br#"{"format":"worldline-export/"#).then(|| {
        "is a `worldline export` file, not a run's bundle: bring it into a store with `worldline import FILE`, then name the run by its id".to_string()
    })
}

/// The header of a bundle's first line (format checked).
pub(super) fn header_of(first: &str, path: &Path) -> Result<Header, BundleError> {
    let err = |message: String| BundleError {
        path: path.display().to_string(),
        line: 1,
        message,
    };
    let header: HeaderLine =
        serde_json::from_str(first).map_err(|e| err(format!("bad header: {e}")))?;
    if header.header.format != FORMAT {
        return Err(err(format!(
            "unknown bundle format `{}` (this worldline reads {FORMAT})",
            header.header.format
        )));
    }
    Ok(header.header)
}

/// The footer of a footer line (`line`, without its newline), its own
/// hash checked (not yet whether it ends the chain). The line as
/// [`footer_line`] wrote it is checked over its own text, `"hash"` taken
/// out, as the recorder hashed it: no value made of it and serialized
/// again (its output and stdout can be megabytes). Any other line (an
/// older writer's, an edited one) is read the long way, [`footer_of`],
/// which says what is wrong.
pub(super) fn footer_of_line(line: &[u8]) -> Result<Footer, String> {
    if let Some(footer) = footer_as_written(line) {
        return Ok(footer);
    }
    let value = serde_json::from_slice(line).map_err(|e| format!("bad footer: {e}"))?;
    footer_of(value)
}

/// The footer on `line` when its hash holds over the line's own text.
fn footer_as_written(line: &[u8]) -> Option<Footer> {
    let inner = line.strip_prefix(b"{\"footer\":")?.strip_suffix(b"}")?;
    let footer = serde_json::from_slice::<FooterLine>(line).ok()?.footer;
    let field = format!(",\"hash\":\"{}\"", footer.hash);
    let at = inner
        .windows(field.len())
        .position(|w| w == field.as_bytes())?;
    let bare = [&inner[..at], &inner[at + field.len()..]];
    (chain_hash_of_parts(&footer.chain_hash, &bare) == footer.hash).then_some(footer)
}

/// The footer of a footer line (`value`, which has `footer`), its own
/// hash checked (not yet whether it ends the chain).
pub(super) fn footer_of(value: Value) -> Result<Footer, String> {
    let mut f: FooterLine =
        serde_json::from_value(value).map_err(|e| format!("bad footer: {e}"))?;
    // Its hash is taken out to hash the rest, which is then not copied to
    // leave it out (the output and stdout can be megabytes).
    let hash = std::mem::take(&mut f.footer.hash);
    if footer_hash(&f.footer) != hash {
        return Err("the footer was changed (its hash does not match)".into());
    }
    f.footer.hash = hash;
    Ok(f.footer)
}

/// A bundle's lines after its header, read one at a time: the events
/// chained so far, the footer and the intent in flight.
pub(super) struct Reader<'a> {
    path: &'a Path,
    /// The events, model requests held compact as their lines are.
    pub(super) events: Held,
    pub(super) footer: Option<Footer>,
    in_flight: Option<Intent>,
    chain: Option<Chain>,
    prev: String,
}

/// Line `line` read straight as the event the recorder wrote, when it is
/// one whose chain hash holds over its own text (the recorder's canonical
/// text with `hash` put after `fuel`, `recorder::with_hash`): a plain
/// event (no footer, intent, fold or compact model call; any of their
/// keys anywhere sends the line the long way), hashed from its text
/// instead of serialized again. `None`: read it the long way, which
/// checks it as before.
fn plain_event(line: &str, prev: &str) -> Option<Event> {
    const FUEL: &str = "\"fuel\":";
    const HASH: &str = ",\"hash\":\"";
    let text = line.strip_suffix('\n')?;
    if !text.starts_with("{\"call\":\"")
        || ["\"footer\":", "\"intent\":", "\"fold\":", "\"extends\":"]
            .iter()
            .any(|key| text.contains(key))
    {
        return None;
    }
    let digits = text.find(FUEL)? + FUEL.len();
    let at = digits + text[digits..].find(|c: char| !c.is_ascii_digit())?;
    let hash = text[at..].strip_prefix(HASH)?.get(..64)?;
    let after = at + HASH.len() + 64;
    if !text[after..].starts_with('"') {
        return None;
    }
    let bare = [&text.as_bytes()[..at], &text.as_bytes()[after + 1..]];
    if chain_hash_of_parts(prev, &bare) != hash {
        return None;
    }
    let event: Event = serde_json::from_str(text).ok()?;
    (event.hash == hash).then_some(event)
}

impl<'a> Reader<'a> {
    pub(super) fn new(path: &'a Path) -> Self {
        Reader {
            path,
            events: Held::default(),
            footer: None,
            in_flight: None,
            chain: None,
            prev: CHAIN_START.to_string(),
        }
    }

    /// The bundle read so far, every event whole.
    pub(super) fn finish(self, header: Header) -> Bundle {
        let b = self.finish_held(header);
        Bundle {
            header: b.header,
            events: b.events.into_whole(),
            in_flight: b.in_flight,
            footer: b.footer,
            chain: b.chain,
        }
    }

    /// The bundle read so far, model requests held compact.
    pub(super) fn finish_held(self, header: Header) -> HeldBundle {
        let rules = header.rules.unwrap_or(0);
        HeldBundle {
            header,
            events: self.events,
            in_flight: self.in_flight.filter(|_| self.footer.is_none()),
            footer: self.footer,
            // No marked line read: written before 0345 (a call that
            // extended another was hashed whole), or none extended another
            // (both rules hash alike), or only a prefix was read (a fork
            // before the first). A run that records its rules was written
            // after 0345: its lines are marked, and a fork of its prefix
            // marks its own (it hashed them whole: a fork with no edits
            // had another chain than its parent).
            chain: self.chain.unwrap_or(match rules {
                0 => Chain::Whole,
                _ => Chain::Lines,
            }),
        }
    }

    /// End with `footer`, which must end the chain read.
    fn end_with(&mut self, footer: Footer) -> Result<(), String> {
        if footer.chain_hash != self.prev {
            return Err("footer chain hash does not match the last event".into());
        }
        self.footer = Some(footer);
        Ok(())
    }

    /// Take line `n` (whole, newline included): its events chained and
    /// checked, or the footer, or an intent.
    pub(super) fn line(&mut self, n: usize, line: &str) -> Result<(), BundleError> {
        let path = self.path;
        let err = |message: String| BundleError {
            path: path.display().to_string(),
            line: n,
            message,
        };
        if self.footer.is_some() {
            return Err(err("data after the footer".into()));
        }
        // Out of order, it goes the long way, which says so.
        let next = self.events.len() as u64;
        if let Some(event) = plain_event(line, &self.prev).filter(|e| e.seq == next) {
            self.in_flight = None;
            self.prev.clone_from(&event.hash);
            self.events.push_read(event, None);
            return Ok(());
        }
        if line.trim().is_empty() {
            return Err(err(
                "an empty line: a bundle has none (the file was edited)".into(),
            ));
        }
        if let Some(footer) = footer_as_written(line.strip_suffix('\n').unwrap_or(line).as_bytes())
        {
            return self.end_with(footer).map_err(err);
        }
        let mut value: Value =
            serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
        if value.get("footer").is_some() {
            let footer = footer_of(value).map_err(err)?;
            return self.end_with(footer).map_err(err);
        }
        if let Some(i) = intent::read(&value) {
            let i = i.map_err(|e| err(format!("bad intent: {e}")))?;
            if i.seq != self.events.len() as u64 {
                return Err(err(format!(
                    "intent for event {} out of order (expected seq {})",
                    i.seq,
                    self.events.len()
                )));
            }
            self.in_flight = Some(i);
            return Ok(());
        }
        self.in_flight = None;
        if let Some(run) = fold::unfold(&value) {
            let run = run.map_err(|e| err(format!("bad folded clock reads: {e}")))?;
            let first = self.events.len() as u64;
            for mut event in run.events {
                if event.seq != self.events.len() as u64 {
                    return Err(err(format!(
                        "folded clock reads from event {} out of order (expected seq {})",
                        event.seq,
                        self.events.len()
                    )));
                }
                event.hash = chain_hash(&self.prev, &event);
                self.prev.clone_from(&event.hash);
                self.events.push(event);
            }
            if self.prev != run.hash {
                return Err(err(format!(
                    "hash chain broken in the folded clock reads (events {first} to {}): the line was changed",
                    self.events.len() - 1
                )));
            }
            return Ok(());
        }
        // A compact line marked so is hashed as written (decision 0345).
        let line_chain = delta::chain_of(&value);
        if let Some(c) = line_chain {
            if self.chain.is_some_and(|seen| seen != c) {
                return Err(err(
                    "compact model calls hashed two ways (with and without `extends.chained`): the bundle was changed".into(),
                ));
            }
            self.chain = Some(c);
        }
        let line_hash = match line_chain {
            Some(Chain::Lines) => {
                let obj = value.as_object_mut().expect("a compact line is an object");
                let hash = match obj.remove("hash") {
                    Some(Value::String(h)) => h,
                    _ => return Err(err("bad event: a compact line without its `hash`".into())),
                };
                let expected = chain_hash_of_text(&self.prev, &canon::to_string(&value));
                Some((hash, expected))
            }
            _ => None,
        };
        let extends = self
            .events
            .take_extends(&mut value)
            .map_err(|e| err(format!("bad event: {e}")))?;
        let mut event: Event =
            serde_json::from_value(value).map_err(|e| err(format!("bad event: {e}")))?;
        if event.seq != self.events.len() as u64 {
            return Err(err(format!(
                "event {} out of order (expected seq {})",
                event.seq,
                self.events.len()
            )));
        }
        let seq = event.seq;
        let expected = match line_hash {
            Some((hash, expected)) => {
                event.hash = hash;
                self.events.push_read(event, extends);
                expected
            }
            None if extends.is_none() => {
                let expected = chain_hash(&self.prev, &event);
                self.events.push_read(event, extends);
                expected
            }
            None => {
                // Hashed whole (before 0345): the request put back.
                self.events.push_read(event, extends);
                let mut whole = self.events.get(seq).expect("just held").clone();
                whole.request = self.events.request(seq).expect("just held").into_owned();
                chain_hash(&self.prev, &whole)
            }
        };
        let event = self.events.get(seq).expect("just held");
        if expected != event.hash {
            return Err(err(format!(
                "hash chain broken at event {}: the event was changed",
                event.seq
            )));
        }
        self.prev.clone_from(&event.hash);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A bundle behind a UTF-8 byte-order mark is told so (it was "bad
    /// header: expected value at line 1 column 1").
    #[test]
    fn a_byte_order_mark_is_named() {
        let e = parse_held(b"\xEF\xBB\xBF{\"header\":{}}\n", Path::new("b.jsonl")).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(
            e.message.starts_with("begins with a UTF-8 byte-order mark"),
            "{}",
            e.message
        );
    }

    /// `Status::ALL` holds each status once, at the place this match gives
    /// it; a status added to the enum does not compile here until it is
    /// given a place (and so a slot in `ALL`). Each is named as it is
    /// recorded.
    #[test]
    fn every_status_is_listed_once_under_its_recorded_name() {
        let place = |s: Status| match s {
            Status::Completed => 0,
            Status::Errored => 1,
            Status::Trapped => 2,
            Status::OutOfFuel => 3,
            Status::MemoryLimit => 4,
            Status::Timeout => 5,
            Status::Exited => 6,
            Status::StepLimit => 7,
            Status::ErrorLimit => 8,
            Status::Unscripted => 9,
        };
        for (i, s) in Status::ALL.into_iter().enumerate() {
            assert_eq!(place(s), i, "{s:?}");
            assert_eq!(json!(s), json!(s.as_str()));
        }
    }

    /// A footer with every field set, none left out of its text.
    fn full() -> Footer {
        Footer {
            backtrace: vec!["run".into()],
            chain_hash: "c".repeat(64),
            error: Some("no \"luck\"\n".into()),
            events: 3,
            final_state_hash: "f".repeat(64),
            fuel: 7,
            grade: Some(
                json!({"verdict": "failed", "score": 0.5, "assertions": [{"b": 1, "a": 2}]}),
            ),
            header_hash: Some("d".repeat(64)),
            hash: "h".repeat(64),
            output: Some("{\"ok\": [1, 2]}".repeat(100)),
            replayable: false,
            status: Status::Timeout,
            stderr: "e".into(),
            stdout: "o".into(),
            truncated: Some("idle".into()),
            truncated_bytes: 9,
        }
    }

    /// A plain event line is read straight from its text only when its
    /// chain hash holds over that text, as the event the long way reads; a
    /// line changed, or one with a key a special line has, goes the long
    /// way, which still reads it.
    #[test]
    fn a_plain_event_line_is_read_from_its_text_as_the_long_way_reads_it() {
        use super::super::Effect;
        use super::super::recorder::Recorder;
        let event = |seq: u64, request: Value, response: Value| Event {
            call: crate::log::Kind::ToolsCall.name().into(),
            effect: Effect::Read,
            fuel: 1000 + seq,
            hash: String::new(),
            injected: (seq == 1).then(|| json!({"stale": true})),
            request,
            response,
            seq,
            vtime_ns: 7 * seq,
            writes: vec![],
        };
        let events = vec![
            event(
                0,
                json!({"name": "list", "args": {"fuel": 3}}),
                json!({"ok": [1, 2.5, "checkout"]}),
            ),
            event(
                1,
                json!({"name": "say", "args": {"text": "\"fuel\":1,\"hash\":\"x\" é \u{1F600}"}}),
                json!({"ok": "checkout"}),
            ),
            event(
                2,
                json!({"name": "get", "args": {"extends": "checkout"}}),
                json!({"ok": null}),
            ),
            event(
                3,
                json!({"name": "get", "args": {}}),
                json!({"error": {"kind": "denied", "message": "checkout\n"}}),
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut rec = Recorder::to_file(File::create(&path).unwrap());
        for e in events {
            rec.append(e).unwrap();
        }
        drop(rec.finish().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        let (mut prev, mut reader) = (CHAIN_START.to_string(), Reader::new(&path));
        for (n, line) in text.split_inclusive('\n').enumerate() {
            let long: Event = serde_json::from_str(line).unwrap();
            assert_eq!(chain_hash(&prev, &long), long.hash);
            let straight = plain_event(line, &prev);
            if line.contains("\"extends\":") {
                assert_eq!(straight, None, "line {n}");
            } else {
                assert_eq!(straight.as_ref(), Some(&long), "line {n}");
            }
            let changed = line.replacen("checkout", "checkouT", 1);
            assert_eq!(plain_event(&changed, &prev), None, "line {n} changed");
            let err = Reader::new(&path).line(n + 1, &changed);
            if n == 0 {
                assert!(err.unwrap_err().message.contains("the event was changed"));
            }
            reader.line(n + 1, line).unwrap();
            prev = long.hash;
        }
        let read: Vec<Event> = reader.events.as_held().to_vec();
        let written: Vec<Event> = (text.split_inclusive('\n'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(read, written);
    }

    /// A blank line is named so: it was `not JSON: EOF while parsing a
    /// value at line 2 column 0`, a place that is not the line's.
    #[test]
    fn an_empty_line_is_said_to_be_one() {
        let path = std::path::Path::new("b.jsonl");
        for blank in ["\n", "  \n", "\r\n"] {
            let e = Reader::new(path).line(4, blank).unwrap_err();
            assert_eq!(e.line, 4);
            assert!(e.message.starts_with("an empty line"), "{}", e.message);
        }
    }

    /// A footer line as written is read straight from its text, as the
    /// long way reads it; one changed (its output, its hash, a space put
    /// in) is not, and the long way still refuses the changed ones and
    /// reads the spaced one.
    #[test]
    fn a_footer_line_is_read_from_its_text_as_the_long_way_reads_it() {
        let mut footer = full();
        footer.hash.clear();
        footer.hash = footer_hash(&footer);
        let line = footer_line(&footer);
        let line = line.strip_suffix('\n').unwrap();
        let long = footer_of(serde_json::from_str(line).unwrap()).unwrap();
        assert_eq!(long, footer);
        assert_eq!(footer_as_written(line.as_bytes()), Some(footer.clone()));
        assert_eq!(footer_of_line(line.as_bytes()), Ok(footer.clone()));
        let changed = [
            line.replacen("[1, 2]", "[1, 3]", 1),
            line.replacen(&footer.hash, &"0".repeat(64), 1),
            line.replacen("\"events\":3", "\"events\":4", 1),
        ];
        for text in &changed {
            assert_eq!(footer_as_written(text.as_bytes()), None, "{text}");
            let e = footer_of_line(text.as_bytes()).unwrap_err();
            assert!(e.contains("does not match"), "{e}");
        }
        let spaced = line.replacen("{\"footer\":", "{\"footer\": ", 1);
        assert_eq!(footer_as_written(spaced.as_bytes()), None);
        assert_eq!(footer_of_line(spaced.as_bytes()), Ok(footer));
    }

    #[test]
    fn a_footer_is_written_as_its_canonical_text() {
        let footer = full();
        let canonical = canon::to_string(&serde_json::to_value(FooterLine { footer }).unwrap());
        assert_eq!(footer_line(&full()), format!("{canonical}\n"));
    }

    #[test]
    fn a_footer_is_hashed_over_its_canonical_text_without_its_hash() {
        let mut footer = full();
        let mut bare = serde_json::to_value(&footer).unwrap();
        bare.as_object_mut().unwrap().remove("hash");
        let expected = canon::sha256_hex(format!(
            "{}\n{}",
            footer.chain_hash,
            canon::to_string(&bare)
        ));
        assert_eq!(footer_hash(&footer), expected);
        footer.hash.clear();
        assert_eq!(footer_hash(&footer), expected);
    }
}
