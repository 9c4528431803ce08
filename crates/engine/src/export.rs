//! Portable runs: `export` writes one JSON file holding a run's bundle and
//! every object it needs (agent, case, world manifest and files); `import`
//! brings such a file into another store, where the run replays, and can
//! gather every run of a second store (the shards of a fanned-out suite)
//! by the same checks.
//!
//! `export --redacted` writes a redacted copy instead (see
//! [`worldline_log::redact::copy`]) under the id `<run>-redacted`, with the agent
//! only: the case and the world hold the data the run read, so they stay
//! behind (a native run's agent is its command line, which the copy's
//! header holds redacted, so it brings none). The file and the bundle
//! header both say it is redacted.
//!
//! Import treats the file as hostile: the run id and object names must be
//! plain names, every object must hash to its name, the bundle's hash chain
//! must hold, and everything is written through a capability handle on the
//! store folder, so nothing can land outside it.

use anyhow::{Context as _, Result};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use worldline_case::error::InputError;
use worldline_log::log::bundle;
use worldline_store::store::StoreDir;

/// The format this worldline writes: objects as base64 of the form
/// `object_codec` keeps them in (a zstd frame, or the bytes themselves).
pub const FORMAT: &str = "worldline-export/2";

/// The formats it reads: `/1` (objects as base64 of their bytes) is read
/// by the same rule, since raw bytes are a kept form too.
const READS: [&str; 2] = ["worldline-export/1", FORMAT];

#[derive(Serialize, Deserialize)]
struct Export {
    format: String,
    run: String,
    bundle: String,
    /// SHA-256 → base64 of the object as kept (see `object_codec.rs`).
    objects: BTreeMap<String, String>,
    /// A redacted copy (its bundle header says of what).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    redacted: bool,
}

/// The id a run read from `id`'s bundle goes under when it leaves the
/// store: a redacted copy's is `<id>-redacted` whoever made it (a viewer's
/// copy of the database store's is read under the run's own id), so that
/// it is never taken for the run it is a copy of.
pub fn copy_id(id: String, header: &bundle::Header) -> String {
    match header.redacted.is_some() && !id.ends_with("-redacted") {
        true => format!("{id}-redacted"),
        false => id,
    }
}

/// Write a run and its objects to one file; with a redactor, a redacted
/// copy and the agent; a run that is a redacted copy (a viewer's runs on a
/// database store), as it is with its agent. Returns the exported run id
/// and whether the file holds a redacted copy.
pub fn export(
    store: &StoreDir,
    run: &str,
    out: &Path,
    redactor: Option<&mut worldline_log::redact::Redactor>,
) -> Result<(String, bool)> {
    let path = store.resolve_run(run)?;
    let mut b = bundle::read_held(&path).map_err(InputError::from)?;
    if b.header.redacted.is_some() && redactor.is_some() {
        return Err(
            InputError::new(&path, "is already a redacted copy; export it as it is").into(),
        );
    }
    worldline_case::output::check_file(out)?;
    let doc = document(store, &path, &mut b, redactor, &BTreeSet::new())?;
    worldline_case::output::write(out, &serde_json::to_vec(&doc)?)?;
    Ok((doc.run, doc.redacted))
}

/// Whether run id `id` is dated after today, which `import` refuses: a
/// run id says when its run was made, and gc reads a run's age from it,
/// so one dated after today (more than a day, for clocks that differ)
/// would never be old enough to remove. (Store metadata: the time read
/// here reaches no record.)
pub fn dated_after_today(id: &str) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    worldline_store::index::row::created_of_id(id).is_some_and(|made| made > now + 86_400)
}

/// The export of the run in bundle `path` (read held as `b`, decision
/// 0380): the run as it is with every object it needs, a redacted copy
/// (with a redactor) with its agent, or a run that is itself a redacted
/// copy with its agent. The objects in `held` are left out: the store
/// importing the document already holds them, checked.
fn document(
    store: &StoreDir,
    path: &Path,
    b: &mut bundle::HeldBundle,
    redactor: Option<&mut worldline_log::redact::Redactor>,
    held: &BTreeSet<String>,
) -> Result<Export> {
    let id = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().to_string());
    // A native run's agent is its identity document, the command line its
    // header also holds: a redacted copy carries the header's, redacted,
    // and no document.
    let agent_only = match b.header.native {
        Some(_) => Vec::new(),
        None => vec![b.header.agent_sha256.clone()],
    };
    let (id, text, shas, redacted) = match redactor {
        Some(r) => {
            // What the policy's `state` paths hide in the world the run
            // met is hidden where the events quote it (a get's answer
            // carried it whole in the copy).
            store.learn_world(r, &b.header.world_hash);
            let clock = (store.case_clock(&b.header.case_hash)).map(worldline_case::time::rfc3339);
            let copy = worldline_log::redact::copy::of(&id, b, clock, r);
            (
                format!("{id}-redacted"),
                bundle::held_to_text(&copy),
                agent_only,
                true,
            )
        }
        // A redacted copy goes under `<id>-redacted` whoever made it (a
        // viewer's copy of the database store's went under the run's own
        // id, which an import of the run then found taken).
        None if b.header.redacted.is_some() => {
            let id = copy_id(id, &b.header);
            (id, read_bundle_text(path)?, agent_only, true)
        }
        None => (
            id,
            read_bundle_text(path)?,
            store.run_objects(&b.header)?,
            false,
        ),
    };
    let mut objects = BTreeMap::new();
    for sha in shas.into_iter().filter(|sha| !held.contains(sha)) {
        let bytes = store.get_object(&sha)?;
        objects.insert(sha, B64.encode(export_form(&bytes)));
    }
    Ok(Export {
        format: FORMAT.into(),
        run: id,
        bundle: text,
        objects,
        redacted,
    })
}

/// An object as an export carries it: compressed harder than the store
/// keeps it (an export is written once and carried away).
fn export_form(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    worldline_log::object_codec::encode(bytes, worldline_log::object_codec::EXPORT_LEVEL)
}

/// An object of an export from the form it carries it in.
fn import_form(
    kept: Vec<u8>,
    sha: &str,
) -> Result<Vec<u8>, worldline_log::object_codec::Undecodable> {
    worldline_log::object_codec::decode(kept, sha, worldline_case::bounded::OBJECT)
}

/// What importing one run did.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub run_id: String,
    /// What it is a copy of, when it is a redacted copy.
    #[serde(skip)]
    pub redacted: Option<bundle::Redacted>,
    /// False when the store held the same run already.
    pub new: bool,
}

/// Why a run of another store was not imported.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub run_id: String,
    pub reason: String,
}

/// Bring every run of store `from` into `store`, as if each were exported
/// and imported: objects are checked against their hashes and bundles
/// against their chains, so a damaged run of the other store is skipped
/// (and named), never copied. Runs already here are left as they are. An
/// object is carried over and checked once, by the first run that needs
/// it: the runs after it find it in `store` (a suite's runs share their
/// agent, and 10,000 of them compressed it 10,000 times).
pub fn import_store(store: &StoreDir, from: &StoreDir) -> Result<(Vec<Imported>, Vec<Skipped>)> {
    let (mut done, mut skipped) = (Vec::new(), Vec::new());
    let mut held = Checked::default();
    ready(store);
    for id in from.run_ids()? {
        if let Some(stray) = (!worldline_store::store::is_run_id(&id))
            .then(|| from.stray(&id))
            .flatten()
        {
            skipped.push(Skipped {
                run_id: id,
                reason: stray.to_string(),
            });
            continue;
        }
        let path = from.bundle_path(&id);
        let (mut carried, mut component) = (Vec::new(), None);
        let outcome = bundle::read_held(&path)
            .map_err(|e| anyhow::Error::from(InputError::from(e)))
            .and_then(|mut b| {
                if b.header.native.is_none() {
                    component = Some(b.header.agent_sha256.clone());
                }
                document(from, &path, &mut b, None, &held.objects)
            })
            .and_then(|doc| {
                carried.extend(doc.objects.keys().cloned());
                import_doc(store, doc, (None, &path), &held)
            });
        match outcome {
            Ok(i) => {
                held.components
                    .extend(component.filter(|a| carried.contains(a)));
                held.objects.extend(carried);
                done.push(i);
            }
            // The store, not the run: every run after it would fail
            // alike (a full disk skipped each run in turn, exit 1).
            Err(e) if e.is::<NotWritten>() => return Err(e),
            Err(e) => skipped.push(Skipped {
                run_id: id,
                reason: format!("{e:#}"),
            }),
        }
    }
    Ok((done, skipped))
}

/// A write into the store that failed (space, rights, its database): the
/// import stops there, naming the store.
#[derive(Debug)]
struct NotWritten(anyhow::Error);

impl NotWritten {
    fn of(e: impl Into<anyhow::Error>) -> anyhow::Error {
        anyhow::Error::new(NotWritten(e.into()))
    }
}

impl std::fmt::Display for NotWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the import stopped: it could not write into the store")
    }
}

impl std::error::Error for NotWritten {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}

/// A bundle's text, as bounded as reading it was.
fn read_bundle_text(path: &Path) -> Result<String, InputError> {
    worldline_case::bounded::read_text(path, worldline_case::bounded::BUNDLE)
        .map_err(|e| InputError::new(path, format!("cannot read bundle: {e}")))
}

/// An export file read, not yet brought into a store.
pub struct Read {
    doc: Export,
    bytes: Vec<u8>,
}

/// Read the export `file`: what is no export (a run's bundle, an empty
/// file, one cut short) is said so, with what to do, before any store is
/// opened (a refused import made an empty store at `--store`).
pub fn read(file: &Path) -> Result<Read, InputError> {
    use worldline_case::bounded;
    let cannot = |e: bounded::Refused| {
        InputError::new(
            file,
            format!("cannot read: {e}; pass a file written by `worldline export`"),
        )
    };
    let open = bounded::open(file).map_err(cannot)?;
    if let Some(e) = begins_as_no_export(file, &open).map_err(|e| cannot(e.into()))? {
        return Err(e);
    }
    let bytes = bounded::read_open(open, bounded::EXPORT).map_err(cannot)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(InputError::new(
            file,
            "is empty, not a worldline export: export the run again (`worldline export RUN -o FILE`)",
        )
        .with_line(1));
    }
    let doc: Export = serde_json::from_slice(&bytes).map_err(|e| {
        let what = match e.is_eof() {
            true => format!("is cut short ({e}): export the run again"),
            false => format!("not a worldline export: {e}"),
        };
        InputError {
            line: (e.line() > 0).then_some((e.line(), e.column().max(1))),
            ..InputError::new(file, what)
        }
    })?;
    Ok(Read { doc, bytes })
}

/// What `file`'s first bytes show it is not, before it is read whole (a
/// 2 GB file of something else was read into memory, then refused): an
/// export is one JSON object, so what begins with anything but `{` after
/// blanks (a zero byte, text, a list), with a UTF-8 byte-order mark
/// (which JSON does not allow), or as a run's bundle is refused there.
fn begins_as_no_export(file: &Path, open: &std::fs::File) -> std::io::Result<Option<InputError>> {
    use std::os::unix::fs::FileExt as _;
    let mut head = [0u8; 4096];
    let mut n = 0;
    while n < head.len() {
        match open.read_at(&mut head[n..], n as u64)? {
            0 => break,
            k => n += k,
        }
    }
    let head = &head[..n];
    // What comes before `at` is blanks (ASCII), or nothing.
    let refuse = |at: usize, what: String| {
        let before = std::str::from_utf8(&head[..at]).unwrap_or_default();
        Some(InputError::at(file, before, at, what))
    };
    if head.starts_with(b"\xEF\xBB\xBF") {
        return Ok(refuse(
            0,
            "begins with a UTF-8 byte-order mark, which JSON does not allow, so it is no worldline export: save it without the mark, or export the run again (`worldline export RUN -o FILE`)".into(),
        ));
    }
    if head.starts_with(br#"{"header":"#) {
        return Ok(Some(InputError::new(
            file,
            "is a run's bundle, not a worldline export: import the store it is in (`worldline import STORE`), or export the run first (`worldline export RUN -o FILE`)",
        )
        .with_line(1)));
    }
    let Some(at) = head.iter().position(|b| !b.is_ascii_whitespace()) else {
        return Ok(None);
    };
    Ok(match head[at] {
        b'{' => None,
        b => refuse(
            at,
            format!(
                "not a worldline export: an export is one JSON object, beginning with `{{`, and this begins with {}; pass a file written by `worldline export`",
                match b {
                    b' '..=b'~' => format!("`{}`", b as char),
                    _ => format!("the byte 0x{b:02X}"),
                }
            ),
        ),
    })
}

/// Bring an exported run into a store.
pub fn import(store: &StoreDir, file: &Path) -> Result<Imported> {
    import_read(store, read(file)?, file)
}

/// Bring an export [`read`] from `file` into a store.
pub fn import_read(store: &StoreDir, read: Read, file: &Path) -> Result<Imported> {
    ready(store);
    import_doc(
        store,
        read.doc,
        (Some(&String::from_utf8_lossy(&read.bytes)), file),
        &Checked::default(),
    )
}

/// Import the export `file` as one source of several: a file refused
/// (unreadable, not an export, damaged) is skipped and named by its path,
/// as another store's damaged run is, so the sources after it are still
/// imported and those before it reported; a write the store refused stops
/// the import.
pub fn import_among(
    store: &StoreDir,
    file: &Path,
) -> Result<std::result::Result<Imported, Skipped>> {
    match import(store, file) {
        Ok(i) => Ok(Ok(i)),
        Err(e) if e.is::<NotWritten>() => Err(e),
        Err(e) => {
            let reason = match e.downcast_ref::<InputError>() {
                Some(i) if i.file == file => match i.line {
                    Some((line, col)) => format!("line {line}, column {col}: {}", i.message),
                    None => i.message.clone(),
                },
                _ => format!("{e:#}"),
            };
            Ok(Err(Skipped {
                run_id: file.display().to_string(),
                reason,
            }))
        }
    }
}

/// The store made ready for an import's writes, once for all its runs:
/// what killed writers left in its folders swept (each sweep reads the
/// whole folder: swept for each run, 10,000 runs read it 10,000 times).
fn ready(store: &StoreDir) {
    for sub in ["objects", "runs"] {
        worldline_case::durable::sweep(&store.root.join(sub));
    }
}

/// Check an export and write its run and objects into the store. `text` is
/// the file it was read from, to place errors in; a run gathered from
/// another store has none (its errors name the bundle).
/// What earlier runs of one import brought into the store: checked then,
/// and held.
#[derive(Default)]
struct Checked {
    objects: BTreeSet<String>,
    /// Those of them that are agents checked to be components.
    components: BTreeSet<String>,
}

/// What an earlier run of the same import `checked` is not read again
/// when the export does not carry it.
fn import_doc(
    store: &StoreDir,
    doc: Export,
    (text, file): (Option<&str>, &Path),
    checked: &Checked,
) -> Result<Imported> {
    // Errors point at the first place the export mentions what they are
    // about (its key, or an object's name).
    let bad_at = |needle: &str, m: String| match text.and_then(|t| Some((t, t.find(needle)?))) {
        Some((t, at)) => InputError::at(file, t, at, m),
        None => InputError::new(file, m),
    };
    let bad = |m: String| bad_at("\"bundle\"", m);
    if !READS.contains(&doc.format.as_str()) {
        return Err(bad_at(
            "\"format\"",
            format!(
                "unknown export format `{}` (this worldline reads {})",
                doc.format,
                READS.join(" and ")
            ),
        )
        .into());
    }
    if !worldline_store::store::is_run_id(&doc.run) {
        return Err(bad_at(
            "\"run\"",
            format!("run id `{}` is not a plain name", doc.run),
        )
        .into());
    }
    if dated_after_today(&doc.run) {
        return Err(bad_at(
            "\"run\"",
            format!(
                "run id `{}` is dated after today: a run id is when its run was made, and gc reads its age from it; import the file `worldline export` wrote",
                doc.run
            ),
        )
        .into());
    }
    for sha in doc.objects.keys() {
        if sha.len() != 64
            || !sha
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        {
            let named = format!("\"{sha}\"");
            return Err(bad_at(&named, format!("object name `{sha}` is not a SHA-256")).into());
        }
    }
    // An object is decoded when the run needs it, checked, and dropped;
    // it is decoded again when it is written: memory holds one object at
    // a time, and objects the run does not name are neither decoded nor
    // stored (an export of thousands of small frames that each decode to
    // hundreds of MiB filled the memory).
    let decode = |sha: &str, data: &str| -> Result<Vec<u8>, InputError> {
        let named = format!("\"{sha}\"");
        let kept = B64
            .decode(data)
            .map_err(|e| bad_at(&named, format!("object {sha}: {e}")))?;
        import_form(kept, sha).map_err(|e| bad_at(&named, format!("object {sha} {e}")))
    };
    let needed = std::cell::RefCell::new(std::collections::BTreeSet::new());
    // Check the bundle, and that the run could be replayed from what the
    // export and the store hold, before anything is written.
    let b = bundle::parse_held(doc.bundle.as_bytes(), file)
        .map_err(|e| bad(format!("bundle: line {}: {}", e.line, e.message)))?;
    if doc.redacted != b.header.redacted.is_some() {
        return Err(bad(
            "the file and its bundle header disagree on whether the run is redacted".into(),
        )
        .into());
    }
    // A database store keeps finished runs only: an unfinished one is
    // this run's refusal, not the store's (it stopped the import as a
    // lost server and was left in the working folder's `unstored/`).
    if b.footer.is_none() && store.database().is_some() {
        return Err(bad(
            "the run has no footer (it was stopped before it ended, or was still being written): a database store keeps finished runs only, so it is not imported".into(),
        )
        .into());
    }
    let object = |sha: &str| -> Result<Vec<u8>> {
        match doc.objects.get(sha) {
            Some(data) => {
                let bytes = decode(sha, data)?;
                needed.borrow_mut().insert(sha.to_string());
                Ok(bytes)
            }
            None => store.get_object(sha).map_err(|_| {
                bad_at(
                    "\"objects\"",
                    format!(
                        "the export lacks object {sha} that the run needs (and this store does not hold it)"
                    ),
                )
                .into()
            }),
        }
    };
    // Brought and checked by an earlier run of this import: a suite's runs
    // share their agent, which was decompressed and hashed again for each
    // (a 22 MB agent cost some 50 ms a run).
    let known = |sha: &str| !doc.objects.contains_key(sha) && checked.objects.contains(sha);
    match &b.header.native {
        // A native run's agent is the identity document its header names
        // (transport and command), not a component; a redacted copy
        // brings none (see `document`).
        Some(native) if !doc.redacted => {
            let agent = object(&b.header.agent_sha256)?;
            if agent != worldline_case::canon::to_string(native).as_bytes() {
                return Err(bad(format!(
                    "the run's agent {} is not the native agent its header names",
                    b.header.agent_sha256
                ))
                .into());
            }
        }
        Some(_) => {}
        None if known(&b.header.agent_sha256)
            && checked.components.contains(&b.header.agent_sha256) => {}
        None => {
            let agent = object(&b.header.agent_sha256)?;
            worldline_runtime::sandbox::check_header(
                &agent,
                file,
                worldline_runtime::sandbox::Built::Agent,
            )
            .map_err(|e| {
                bad(format!(
                    "the run's agent {}: {}",
                    b.header.agent_sha256, e.message
                ))
            })?;
        }
    }
    // A redacted copy brings its agent only (see the module comment).
    if !doc.redacted {
        if !known(&b.header.case_hash) {
            object(&b.header.case_hash)?;
        }
        let mut world_hash = b.header.world_hash.clone();
        let mut world = object(&world_hash)?;
        // An overlaid world: its record names the base world.
        if let Some(record) = worldline_case::world::overlay::Record::parse(&world) {
            world_hash = record.world;
            world = object(&world_hash)?;
        }
        let manifest: BTreeMap<String, String> = serde_json::from_slice(&world).map_err(|e| {
            bad(format!(
                "object {world_hash} is not the world manifest the run names: {e}"
            ))
        })?;
        worldline_case::world::check_manifest(&manifest).map_err(|m| {
            bad(format!(
                "the world manifest {world_hash} names files no folder can hold: {m}"
            ))
        })?;
        for sha in manifest.values().filter(|sha| !known(sha)) {
            object(sha)?;
        }
    }

    // Hold what the export brings, and the run, before looking at what the
    // store has (decision 0121): a gc pass that planned before the run
    // appeared either sees them held, or has deleted them by the time the
    // hold returns, and they are stored again below. (What the store
    // itself gave was held as it was read.)
    let needed = needed.into_inner();
    let mut held: Vec<&str> = needed.iter().map(String::as_str).collect();
    held.push(&doc.run);
    store.hold(&held).map_err(NotWritten::of)?;
    // A database store's working folder knows the runs stored so far.
    store.pull().map_err(NotWritten::of)?;
    // Every file appears whole or not at all (a temporary file renamed
    // into place), so a killed import leaves nothing torn, and an object a
    // torn write of an older worldline left is replaced.
    let root = Dir::open_ambient_dir(&store.root, ambient_authority())
        .context("opening the store")
        .map_err(NotWritten::of)?;
    let put = |name: &str, data: &[u8]| -> Result<()> {
        let tmp = format!("{name}.tmp{}", std::process::id());
        root.write(&tmp, data)
            .and_then(|()| root.rename(&tmp, &root, name))
            .map_err(|e| {
                let _ = root.remove_file(&tmp);
                NotWritten::of(store.write_error(&store.root.join(name), e))
            })?;
        Ok(())
    };
    for sha in &needed {
        let name = format!("objects/{sha}");
        let intact = root.read(&name).is_ok_and(|have| {
            worldline_log::object_codec::decode(have, sha, worldline_case::bounded::OBJECT).is_ok()
        });
        if !intact {
            let data = decode(sha, &doc.objects[sha])?;
            put(
                &name,
                &worldline_log::object_codec::encode(
                    &data,
                    worldline_log::object_codec::STORE_LEVEL,
                ),
            )?;
        }
    }
    let run_name = format!("runs/{}.jsonl", doc.run);
    let mut new = root.metadata(&run_name).is_err();
    if new {
        put(&run_name, doc.bundle.as_bytes())?;
    } else {
        let existing = root.read(&run_name)?;
        // What the store holds is the start of this run (a copy of a
        // store taken while the run was being written): the whole run
        // takes its place. (A prefix holds no footer: the whole bundle
        // parsed, and nothing follows a footer.)
        let whole = doc.bundle.as_bytes();
        if existing.len() < whole.len() && whole.starts_with(&existing) {
            put(&run_name, whole)?;
            new = true;
        } else if whole.len() < existing.len() && existing.starts_with(whole) {
            // The file holds the start of the run the store holds whole
            // (an export taken while it was being written): left alone,
            // as a run already here is (it was "a different run").
            ::log::info!(
                "the store already holds run `{}` in full, and the file imported only its start: nothing imported",
                doc.run
            );
        } else if existing != whole {
            return Err(bad(format!(
                "a different run `{}` already exists in this store",
                doc.run
            ))
            .into());
        }
    }
    // Another importer may have stored the run since this one looked.
    new &= store.publish(&doc.run).map_err(NotWritten::of)?;
    worldline_store::index::record_file(store, &doc.run);
    Ok(Imported {
        run_id: doc.run,
        redacted: b.header.redacted,
        new,
    })
}
