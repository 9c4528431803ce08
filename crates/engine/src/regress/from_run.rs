//! `worldline case from-run`: a recorded run turned into a case that
//! summons its world again. The source case's text is the start (world,
//! clock, task, permissions, overlays, user and approvals); the run's own
//! seed replaces the case's; every fault the run met, whether a case rule
//! or a fuzz fault (a shrunk reproducer's schedule included), becomes an
//! explicit `[[inject]]` rule at the same call; the model's answers are
//! served from a copy of the bundle kept beside the case; and `[origin]`
//! names the run by id and chain hash.
//!
//! Why every fault the run met is written as an explicit `[[inject]]` rule,
//! with the tool and `nth` read from the run's events (was decision 0211): the
//! case then does not depend on how a profile draws, a reader sees the
//! incident's faults as plain rules, and a fixed agent meets the same faults at
//! the same calls; keeping `[fuzz]` with the run's seed pinned would reproduce
//! only the old agent (one that calls differently draws other faults), and a
//! `[fuzz] schedule` key would be a second way to write what `[[inject]]` says.
//! A fuzz clock skew has no case key and is reported as not carried.
//!
//! A fork's edits: its `--respond` at a tool call is an `[[inject]]`
//! `response` (or `error`) rule at that call; at a model call or a
//! model-played user's turn it is in the recording the case replays.
//! What no case key holds (a world patch, a permission or an approval
//! changed part way) is reported as not carried, naming the edit.

use anyhow::Result;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use worldline_case::case::discover::lexical;
use worldline_case::case::inject::Action;
use worldline_case::case::model::{CassetteMode, Provider};
use worldline_case::case::origin::{CreatedFrom, Origin};
use worldline_case::case::user::PlayedBy;
use worldline_case::case::{self, fuzz::PlannedFault};
use worldline_case::error::InputError;
use worldline_log::log::bundle::{Edit, Parent};
use worldline_log::log::event::{By, Effect, Event};
use worldline_log::log::{Call, Kind, rules};
use worldline_store::store::StoreDir;

/// What `case from-run` wrote.
#[derive(Debug, Serialize)]
pub struct FromRun {
    pub run_id: String,
    pub chain_hash: String,
    pub case: PathBuf,
    /// The copy of the run's bundle (the recording and the provenance).
    pub bundle_copy: PathBuf,
    /// `[[inject]]` rules written, one per fault the run met.
    pub injects: usize,
    /// Model calls the recording answers (0: the case keeps its provider).
    pub model_calls: usize,
    /// What the run had that the case cannot carry.
    pub not_carried: Vec<String>,
    /// The world the case names (`name@vN`).
    pub world: String,
}

/// The options of `case from-run`.
pub struct Options<'a> {
    pub run: &'a str,
    pub output: &'a Path,
    /// Take `[expect]` from this case file instead of the run's case.
    pub expect_from: Option<&'a Path>,
    /// What the `recorded` provider does past the recording.
    pub fallback: CassetteMode,
}

/// Write the case (and the bundle copy beside it); nothing is written when
/// any step fails, and an existing file is never overwritten.
pub fn from_run(store: &StoreDir, opts: &Options) -> Result<FromRun> {
    // The run found, then where it writes checked, before the run is read
    // (a long run was read whole, then refused for a path under a file).
    let path = store.resolve_run(opts.run)?;
    let out = opts.output;
    if out.extension().is_none_or(|x| x != "toml") {
        return Err(InputError::new(out, "the case to write must end in .toml").into());
    }
    let copy = out.with_extension("run.jsonl");
    for p in [out, copy.as_path()] {
        worldline_case::output::check_new(p, "the case to write (-o) and its bundle copy")?;
    }
    // Held compact (decision 0380): what the case takes is the run's tool
    // calls, faults and user turns, never a model request whole.
    let rec = crate::replay::open_to_read(store, path, None)?;
    let events = rec.events();
    let Some(footer) = &rec.bundle.footer else {
        return Err(InputError::new(
            &rec.path,
            "the run has no footer (it was cut off), so it has no chain hash to name it by",
        )
        .into());
    };
    let source_case = store.object_path(&rec.bundle.header.case_hash);
    let source = case::without_seed(&rec.case.source);
    let mut table: toml::Table = toml::from_str(&source).map_err(|e| {
        let past = case::is_integer_past_toml(&e);
        let e = InputError::toml(&source_case, &source, &e);
        if !past {
            return e;
        }
        // A case recorded before such integers were refused (only the seed
        // may be past 2^63 - 1).
        InputError::new(
            &rec.path,
            format!(
                "its case holds an integer past {} ({e}), which no TOML case can hold, so no case can be written from it; copy the case, lower the integer and run it",
                i64::MAX
            ),
        )
    })?;
    let mut not_carried = Vec::new();
    let source_rules: Vec<Value> = match table.remove("inject") {
        Some(toml::Value::Array(a)) => a.iter().map(to_json).collect(),
        _ => Vec::new(),
    };
    let allowed = |tool: &str| (rec.case.permissions).allow_over(&rec.case.world.permissions, tool);
    let (injects, denied) = inject_rules(events, &source_rules, &rec.case.world, allowed)?;
    not_carried.extend(denied);
    table.remove("fuzz");
    table.remove("origin");
    if let Some(source) = &rec.bundle.header.fuzz {
        let faults =
            worldline_runtime::mediate::faults::Faults::new(source, rec.bundle.header.seed);
        if let Some(skew) = faults.skew_s().filter(|s| *s != 0) {
            not_carried.push(format!(
                "the agent's clock was skewed by {skew} s (a fuzz fault no case key sets)"
            ));
        }
    }
    if events.iter().any(|e| {
        Kind::of(&e.call) != Some(Kind::ToolsCall)
            && e.mark().is_some_and(|m| matches!(m.by, By::Fuzz(_)))
    }) {
        not_carried.push(
            "fuzz faults on the user's side (user turns, approvals, the user's own tool calls) have no [[inject]] rule".into(),
        );
    }
    not_carried.extend(native_command(&mut table, &rec.bundle.header, out));
    if rec.rules < rules::CURRENT {
        not_carried.push(format!(
            "the rules the run ran under (rules {}): the case runs under this worldline's, rules {} (fixes that change what a run records: decision 0423), so it may not end as the run did",
            rec.rules,
            rules::CURRENT
        ));
    }
    let seed = rec.bundle.header.seed;
    table.insert(
        "seed".into(),
        i64::try_from(seed).map_or_else(|_| seed.to_string().into(), toml::Value::Integer),
    );
    if !injects.is_empty() {
        table.insert(
            "inject".into(),
            super::toml_value(&Value::Array(injects.clone()), "inject")?,
        );
    }
    if let Some(path) = opts.expect_from {
        take_expect(&mut table, path, |_| {
            store.load_world(&rec.bundle.header.world_hash)
        })?;
    }
    let model_calls = events
        .iter()
        .filter(|e| Kind::of(&e.call) == Some(Kind::ModelComplete))
        .count();
    let recording = file_name(&copy);
    let recorded_model = model_calls > 0 && rec.case.model.provider != Provider::Scripted;
    if recorded_model && let Some(model) = section(&mut table, "model") {
        model.insert("provider".into(), "recorded".into());
        model.insert("recording".into(), recording.clone().into());
        model.insert("cassette".into(), cassette_name(opts.fallback).into());
    }
    let scripted_from_run = rec
        .case
        .user
        .as_ref()
        .is_some_and(|u| u.played_by == PlayedBy::Model && !u.stand_in_plays());
    if let Some(parent) = &rec.bundle.header.parent {
        let carried = Carried {
            recorded_model,
            scripted_from_run,
        };
        not_carried.extend(carried.edits_left(parent, events));
    }
    not_carried.extend(run_settings(
        &mut table,
        &rec.bundle.header,
        recorded_model,
        model_calls,
    ));
    if let Some(u) = rec
        .case
        .user
        .as_ref()
        .filter(|u| u.played_by == PlayedBy::Model)
        && let Some(toml::Value::Table(user)) = table.get_mut("user")
    {
        if u.stand_in_plays() {
            // Its scripted stand-in played (no model was configured): the
            // stand-in is the user, as it was (decision 0386).
            only_scripted_keys(user);
        } else {
            script_user(user, events)?;
        }
    }
    let origin = Origin {
        created_from: CreatedFrom::Run,
        run: Some(rec.id.clone()),
        chain_hash: Some(footer.chain_hash.clone()),
        bundle: Some(recording),
        world_hash: Some(rec.bundle.header.world_hash.clone()),
        trace_id: None,
        trace_sha256: None,
    };
    table.insert(
        "origin".into(),
        super::toml_value(&serde_json::to_value(&origin)?, "origin")?,
    );
    let description = format!(
        "Made from run {} (`worldline case from-run`).{}",
        rec.id,
        table
            .get("description")
            .and_then(|d| d.as_str())
            .map(|d| format!("\n{d}"))
            .unwrap_or_default()
    );
    table.insert("description".into(), description.into());

    // A scripted model stays as it is: nothing is answered from the copy.
    let answers = match recorded_model {
        true => "its model answers from the copy\n# of its bundle beside this file",
        false => "the bundle's copy beside this\n# file as its provenance",
    };
    let text = format!(
        "# Made by `worldline case from-run {}`: the run's world, seed, clock and\n# task, its faults as [[inject]] rules, {answers}. Edit the expectations as the fix needs.\n{}",
        rec.id,
        toml::to_string(&table)?
    );
    // The new case must load as it stands (its world from the store's
    // snapshot of the one the run met) before anything is written.
    case::parse(out, text.clone().into_bytes(), |_| {
        store.load_world(&rec.bundle.header.world_hash)
    })
    .map_err(|e| {
        // The recorded case itself refused too: a rule added since.
        let recorded = case::parse(&source_case, rec.case.source.clone().into_bytes(), |_| {
            store.load_world(&rec.bundle.header.world_hash)
        });
        match recorded {
            Err(_) => refused_since(&rec, &source_case, e).into(),
            Ok(_) => anyhow::anyhow!("the case made from the run does not load: {e}"),
        }
    })?;
    let bundle_bytes = std::fs::read(&rec.path)
        .map_err(|e| InputError::new(&rec.path, format!("cannot read: {e}")))?;
    worldline_case::output::write_new(&copy, &bundle_bytes, "the bundle copy")?;
    if let Err(e) =
        worldline_case::output::write_new(out, text.as_bytes(), "the case to write (-o)")
    {
        let _ = std::fs::remove_file(&copy);
        return Err(e.into());
    }
    Ok(FromRun {
        run_id: rec.id,
        chain_hash: footer.chain_hash.clone(),
        case: out.to_path_buf(),
        bundle_copy: copy,
        injects: injects.len(),
        model_calls: if recorded_model { model_calls } else { 0 },
        not_carried,
        world: rec.bundle.header.world.clone(),
    })
}

/// The case made from `rec` does not load: its case (or its world) holds
/// what a rule added after the run was recorded refuses (decisions 0412
/// on), which the run itself replays past. Said of the run, the problem
/// placed in the world's file or named by its key (the case's own lines
/// are of a file not written), with the recorded case to copy and fix.
fn refused_since(rec: &crate::replay::RecordedRun, case: &Path, e: InputError) -> InputError {
    let hash = &rec.bundle.header.world_hash;
    let in_world = e.file.iter().skip_while(|c| *c != hash.as_str()).skip(1);
    let in_world: PathBuf = in_world.collect();
    let file = in_world.display();
    let (place, fix) = match (in_world.as_os_str().is_empty(), e.line) {
        (true, _) => (String::new(), "fix it".to_string()),
        (false, Some((line, col))) => (
            format!("its world's {file}:{line}:{col}: "),
            format!("fix its world's {file} in a copy of the world"),
        ),
        (false, None) => (
            format!("its world's {file}: "),
            format!("fix its world's {file} in a copy of the world"),
        ),
    };
    InputError::new(
        &rec.path,
        format!(
            "its case is refused by a rule added after the run was recorded ({place}{}), so no case can be written from it (the run itself replays as it ran); copy the case it recorded ({}), {fix} and run it",
            e.message,
            case.display()
        ),
    )
}

/// One explicit rule per injected tool answer: the case rule it came from
/// (its tool made exact, its conditions replaced by the call's number) or
/// the fuzz fault written out. Calls are numbered per tool among those past
/// the permission check, as both rules and fuzz faults count them. A stale
/// answer's `field` on a tool that answers no rows, or none holding the
/// field (a glob's rule, or a fault profile's entry, met one), hid
/// nothing, and a case refuses it
/// there (decision 0412): it is left out. A fork's answer to a call of a
/// tool the case's permissions deny has no rule (a denied call is refused
/// before any rule): it is named in the second list, as not carried.
fn inject_rules(
    events: &[Event],
    source_rules: &[Value],
    world: &worldline_case::world::World,
    allowed: impl Fn(&str) -> bool,
) -> Result<(Vec<Value>, Vec<String>)> {
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let (mut rules, mut denied) = (Vec::new(), Vec::new());
    for e in events {
        let Call::ToolsCall { request, response } = e.typed() else {
            continue;
        };
        let tool = request.name.as_str();
        if e.effect == Effect::Denied && e.injected.is_none() {
            continue;
        }
        if e.mark().is_some_and(|m| matches!(m.by, By::Fork)) && !allowed(tool) {
            denied.push(format!(
                "the fork's --respond at event {} answered `{tool}`, which the case's permissions deny: a denied call is refused before any [[inject]] rule, so none is written and the case's call is denied; to answer it, allow `{tool}` in the case's [permissions] and add an [[inject]] rule with the fork's response",
                e.seq
            ));
            continue;
        }
        let nth = seen.entry(tool.to_string()).or_default();
        *nth += 1;
        let Some(mark) = e.mark() else { continue };
        let mut rule = if let By::Rule(i) = mark.by {
            let mut r = source_rules.get(i as usize).cloned().ok_or_else(|| {
                anyhow::anyhow!(
                    "event {} names case rule {i}, which the case does not have",
                    e.seq
                )
            })?;
            if let Value::Object(o) = &mut r {
                o.remove("when");
            }
            r
        } else if let By::Fuzz(f) = mark.by {
            let f: PlannedFault = serde_json::from_value(f.clone())?;
            fault_rule(&f)
        } else if let By::Fork = mark.by {
            // A fork's answer (`--respond`): the rule that gives it.
            match (&response.ok, &response.error) {
                (Some(ok), _) => json!({"response": ok}),
                (None, Some(error)) => match &error.message {
                    Some(Value::String(message)) => {
                        json!({"error": error.kind, "message": message})
                    }
                    _ => json!({"error": error.kind}),
                },
                (None, None) => continue,
            }
        } else {
            continue;
        };
        rule["tool"] = Value::from(tool);
        rule["nth"] = Value::from(*nth);
        let hides_nothing = |field: &str| {
            worldline_case::case::inject::stale_field_problem(
                tool,
                field,
                &world.tools,
                &world.initial,
            )
            .is_some()
        };
        if let Some(Value::Object(stale)) = rule.get_mut("stale")
            && stale
                .get("field")
                .and_then(Value::as_str)
                .is_some_and(hides_nothing)
        {
            stale.remove("field");
        }
        rules.push(rule);
    }
    Ok((rules, denied))
}

/// What the run was run with beside its case: a resumed run's raised
/// `[limits]` are written into the case, and so are its `--model-set`
/// keys when the case's own model answers (a recording replays its
/// answers whatever they were); a model seed of its own (`--model-seed`,
/// a group's member) has no case key, so it is named with the flag that
/// draws the same answers.
fn run_settings(
    table: &mut toml::Table,
    header: &worldline_log::log::Header,
    recorded_model: bool,
    model_calls: usize,
) -> Vec<String> {
    if !header.limits.is_empty() {
        let raised = header.limits.iter().map(|(k, v)| {
            let v = i64::try_from(*v).unwrap_or(i64::MAX);
            (k.clone(), toml::Value::Integer(v))
        });
        if let Some(limits) = section(table, "limits") {
            limits.extend(raised);
        }
    }
    if recorded_model {
        return Vec::new();
    }
    if !header.model_overrides.is_empty() {
        let set = (header.model_overrides.iter())
            .map(|(k, v)| (k.clone(), worldline_case::case::model::setting_value(v)));
        if let Some(model) = section(table, "model") {
            model.extend(set);
        }
    }
    match header.model_seed {
        Some(seed) if model_calls > 0 => vec![format!(
            "the run's model seed {seed} (`--model-seed`, or its group's): a case has no key for it; `run` or `test` the case with `--model-seed {seed}` to draw the scripted model's answers as the run did"
        )],
        _ => Vec::new(),
    }
}

/// A native run's command in the case written to `out`: the case's
/// `exec` arguments that named files beside the case (made absolute when
/// it loaded, as the header records them) rebased to `out`'s folder (they
/// were copied as written, and the case in another folder could not start
/// its agent); a command given as `--exec -- CMD` is named as not carried,
/// as `--agent` is the command line's.
fn native_command(
    table: &mut toml::Table,
    header: &worldline_log::log::Header,
    out: &Path,
) -> Option<String> {
    let native = header.native.as_ref().filter(|n| n.transport == "exec")?;
    let Some(toml::Value::Array(exec)) = table.get_mut("exec") else {
        // Given by `--exec` or by the project file's `exec` (the header
        // does not say which; it was called `--exec` either way), quoted
        // as a shell reads it.
        let words = native.command.iter().map(String::as_str);
        let command = shlex::try_join(words).unwrap_or_else(|_| native.command.join(" "));
        return Some(format!(
            "the agent, `{command}` (given by `--exec` or the project file's `exec`, not by the case): give it to `test` as the run was given it, or add `exec = [...]` to the case",
        ));
    };
    if exec.len() != native.command.len() {
        return None;
    }
    // `-o x.toml` has the folder `""`, which no path was made relative to
    // (every argument stayed absolute).
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    // (`lexical`: an argument `../agent/ag.py` of a case in `cases/` was
    // written `…/cases/../agent/ag.py`.)
    let folder =
        lexical(&std::path::absolute(parent.unwrap_or(Path::new("."))).unwrap_or_default());
    for (arg, ran) in exec.iter_mut().zip(&native.command) {
        let ran_path = Path::new(ran);
        if arg.as_str() == Some(ran) || !ran_path.is_absolute() {
            continue;
        }
        let ran_path = lexical(ran_path);
        let rebased = match ran_path.strip_prefix(&folder) {
            Ok(inside) => inside.display().to_string(),
            Err(_) => ran_path.display().to_string(),
        };
        *arg = rebased.into();
    }
    None
}

/// The case's table `name` (`[model]`, `[limits]`), made when it has
/// none (`None` for a key of that name that is no table, which a case that
/// loaded does not have).
fn section<'a>(table: &'a mut toml::Table, name: &str) -> Option<&'a mut toml::Table> {
    table
        .entry(name)
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
}

/// What of a fork's edits the case carries: a tool call's answer as an
/// `[[inject]]` rule ([`inject_rules`]), a model's answer or model seed
/// in the recording the case's model replays (`recorded_model`), a user's
/// line in the script made from the run's (`scripted_from_run`).
struct Carried {
    recorded_model: bool,
    scripted_from_run: bool,
}

impl Carried {
    /// The edits of every fork point of the run's lineage the case does not
    /// carry, each named with its event: no case key changes the world,
    /// the permissions or an approval part way through a run.
    fn edits_left(&self, parent: &Parent, events: &[Event]) -> Vec<String> {
        let mut left = Vec::new();
        for point in parent.fork_points() {
            let at = point.event;
            for edit in &point.edits {
                let why = match edit {
                    Edit::Respond { .. } => {
                        let call = events.iter().find(|e| e.seq == at).map(|e| e.call.as_str());
                        let kind = call.and_then(Kind::of);
                        match kind {
                            Some(Kind::ToolsCall) => continue,
                            Some(Kind::ModelComplete) if self.recorded_model => continue,
                            Some(Kind::UserSay) if self.scripted_from_run => continue,
                            Some(Kind::ModelComplete) => format!(
                                "the fork's --respond at event {at} (a model call): the case's scripted model gives its own answer"
                            ),
                            Some(Kind::UserSay) => format!(
                                "the fork's --respond at event {at} (a user turn): the case's user says its own line"
                            ),
                            Some(kind) => format!(
                                "the fork's --respond at event {at} ({}): no case key answers it",
                                kind.name()
                            ),
                            None => format!(
                                "the fork's --respond at event {at} (`{}`): no case key answers it",
                                call.unwrap_or("a call the run does not hold")
                            ),
                        }
                    }
                    Edit::Reseed { .. } if self.recorded_model => continue,
                    Edit::Reseed { model_seed } => format!(
                        "the fork's model seed {model_seed} from event {at}: a case's scripted model draws its answers with one seed from its start"
                    ),
                    Edit::Allow { tool } => format!(
                        "the fork's --allow {tool} from event {at}: a case's permissions hold from its start"
                    ),
                    Edit::Deny { tool } => format!(
                        "the fork's --deny {tool} from event {at}: a case's permissions hold from its start"
                    ),
                    Edit::Set { path, .. } => format!(
                        "the fork's --set {path} at event {at}: a case's world is set before it starts"
                    ),
                };
                left.push(why);
            }
        }
        left
    }
}

/// A model-played user made scripted: its recorded lines, one rule per
/// turn, in place of the persona and its model.
fn script_user(user: &mut toml::Table, events: &[Event]) -> Result<()> {
    let mut rules = Vec::new();
    let mut last = 0;
    // The user's own tool calls since its last turn: made before it
    // answered, so its rule makes them (they were dropped, and the case's
    // state checks failed where the run passed).
    let mut calls: Vec<Value> = Vec::new();
    // A rule takes `[user] latency_ms` when it says none.
    let default_ms = user
        .get("latency_ms")
        .and_then(toml::Value::as_integer)
        .unwrap_or(0);
    for e in events {
        let response = match e.typed() {
            Call::UserSay { response, .. } => response,
            Call::UserToolsCall { request, .. } => {
                calls.push(serde_json::json!({"tool": request.name, "args": request.args()}));
                continue;
            }
            _ => continue,
        };
        let made = std::mem::take(&mut calls);
        // A fork's answer (`--respond`) carries no turn: it is the turn
        // after the one before it.
        let turn = match response.user.as_ref().and_then(|u| u.turn) {
            Some(turn) => turn,
            None if e.mark().is_some_and(|m| matches!(m.by, By::Fork)) => last + 1,
            None => continue,
        };
        last = turn;
        let mut rule = serde_json::json!({"turn": turn});
        if !made.is_empty() {
            rule["calls"] = Value::Array(made);
        }
        // The time the model that played it took, as the scripted rule's.
        let took = (response.user.as_ref())
            .and_then(|u| u.by.as_ref())
            .and_then(|by| by["model"]["virtual_latency_ms"].as_u64());
        // (Said only where it differs from that default.)
        if let Some(ms) = took.filter(|ms| i64::try_from(*ms).ok() != Some(default_ms)) {
            rule["latency_ms"] = ms.into();
        }
        if let Some(reply) = response.reply {
            rule["reply"] = reply.into();
        } else if let Some(end) = response.ended {
            // As the agent was given them: a reason that is no text as
            // none, satisfied unless `true` as not (a fork's end may leave
            // either out, which TOML, with no null, could not hold: exit 4).
            rule["end"] = end.reason().as_str().unwrap_or_default().into();
            rule["satisfied"] = end.satisfied().into();
        } else {
            continue;
        }
        rules.push(rule);
    }
    only_scripted_keys(user);
    user.remove("default");
    user.insert(
        "rules".into(),
        super::toml_value(&Value::Array(rules), "user.rules")?,
    );
    Ok(())
}

/// A model-played user's table made a scripted user's: its model keys
/// left out.
fn only_scripted_keys(user: &mut toml::Table) {
    for key in [
        "persona",
        "model",
        "satisfied_marker",
        "end_marker",
        "append_instructions",
        "prior_turns",
    ] {
        user.remove(key);
    }
    user.insert("played_by".into(), "scripted".into());
}

/// A fuzz fault as the `[[inject]]` rule that does the same.
fn fault_rule(f: &PlannedFault) -> Value {
    let mut r = serde_json::Map::new();
    match &f.action {
        Action::Stale(s) => {
            r.insert("stale".into(), serde_json::to_value(s).unwrap_or_default());
        }
        Action::Deny => {
            r.insert("deny".into(), true.into());
        }
        Action::Error(kind) => {
            r.insert("error".into(), kind.as_str().into());
        }
        Action::Empty => {
            r.insert("empty".into(), true.into());
        }
        Action::Partial(p) => {
            let mut t = serde_json::Map::new();
            t.insert("fields".into(), p.fields.clone().into());
            if let Some(k) = p.error {
                t.insert("error".into(), k.as_str().into());
            }
            r.insert("partial".into(), t.into());
        }
        Action::Respond(v) => {
            r.insert("response".into(), v.clone());
        }
        Action::Injection(i) => {
            r.insert(
                "injection".into(),
                serde_json::to_value(i).unwrap_or_default(),
            );
        }
        Action::Delay => {}
    }
    if let Some(ms) = f.latency_ms {
        r.insert("latency_ms".into(), ms.into());
    }
    Value::Object(r)
}

/// Replace the case's `[expect]` with the one in `path`, a case read
/// against the run's world (`world`): a problem of its `[expect]` is named
/// at its own line, not at the case that would have been written.
fn take_expect(
    table: &mut toml::Table,
    path: &Path,
    world: impl FnOnce(&str) -> Result<std::sync::Arc<worldline_case::world::World>, InputError>,
) -> Result<()> {
    let text = worldline_case::bounded::read_text(path, worldline_case::bounded::DOCUMENT)
        .map_err(|e| InputError::new(path, format!("cannot read case: {e}")))?;
    case::parse(path, text.clone().into_bytes(), world)?;
    let other: toml::Table =
        toml::from_str(&text).map_err(|e| InputError::toml(path, &text, &e))?;
    let expect = other
        .get("expect")
        .ok_or_else(|| InputError::new(path, "has no [expect] to take"))?;
    table.insert("expect".into(), expect.clone());
    Ok(())
}

fn cassette_name(mode: CassetteMode) -> &'static str {
    match mode {
        CassetteMode::None => "none",
        CassetteMode::Once => "once",
        CassetteMode::All => "all",
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

fn to_json(v: &toml::Value) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}
