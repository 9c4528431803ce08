//! Fault profiles (`[fuzz]` in a case, or a separate faults file) and the
//! explicit fault schedules a shrunk reproducer runs with.
//!
//! A profile says, per tool or glob, how likely each fault is: denial,
//! stale data (with an age range), each error kind, an empty result, a
//! partial write, and added latency (a distribution); plus a clock-skew
//! range for the agent's wall clock. A fuzz run draws from it with a seeded
//! stream (`mediate::faults`). A schedule names the faults outright: the n-th
//! call of a tool gets this fault. The header of a fuzz run records which
//! of the two it ran with, so a replay re-creates the same faults.
//! `[fuzz.user]` adds faults on the user's side of a conversation.
//!
//! Why user faults are tool faults under pseudo-tool names (was decision 0078):
//! `[fuzz.user]` draws for each user turn (silence, another line, latency) and
//! each approval (deny) go through the mediator's fault draws, counted and
//! recorded under `user.say` and `approval.request`, so the campaign's "faults
//! a run met", a reproducer's schedule, shrinking and `repro` needed no change,
//! as a separate fault vocabulary for users would have. A user turn's fault is
//! drawn before the call is mediated, not inside the answer, so a model user
//! replayed from the log draws the same faults.

use super::inject::Action;
use crate::error::InputError;
use crate::error_kind::ErrorKind;
use crate::world::{self, World};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// An inclusive integer range, written `[lo, hi]` or as one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "[i64; 2]")]
pub struct Range {
    pub lo: i64,
    pub hi: i64,
}

/// Read by hand rather than as an untagged enum, whose error ("data did
/// not match any variant of untagged enum") says neither what was wrong
/// nor what to write.
impl<'de> Deserialize<'de> for Range {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, SeqAccess, Unexpected, Visitor};
        struct Form;
        impl<'de> Visitor<'de> for Form {
            type Value = Range;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer, or [lo, hi]: two integers")
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Range, E> {
                Ok(Range { lo: v, hi: v })
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Range, E> {
                let v = i64::try_from(v)
                    .map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))?;
                self.visit_i64(v)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Range, A::Error> {
                let lo = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(0, &self))?;
                let hi = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(1, &self))?;
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::invalid_length(3, &self));
                }
                Ok(Range { lo, hi })
            }
        }
        d.deserialize_any(Form)
    }
}

impl From<Range> for [i64; 2] {
    fn from(r: Range) -> Self {
        [r.lo, r.hi]
    }
}

/// How added latency is spread over its range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dist {
    /// Every value of the range equally likely.
    #[default]
    Uniform,
    /// Each power-of-two band of the range equally likely, then uniform
    /// inside the band: mostly short delays, now and then a long one.
    /// Integer arithmetic only, so every machine draws the same value.
    Log,
}

/// Stale answers: probability, age range in seconds, the time field that
/// hides newer rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaleFault {
    pub age_s: Range,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub p: f64,
}

/// Partial writes: probability, the fields that are written, the error
/// kind the call then fails with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialFault {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub fields: Vec<String>,
    pub p: f64,
}

/// A prompt injection: probability, the text, and the vector it lands at
/// (default: every vector the answer holds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectionFault {
    pub p: f64,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<String>,
}

/// Added latency: probability, range in milliseconds, distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table `{ p = PROBABILITY, ms = [LOW, HIGH] }` (`latency_ms` of a faults profile is a chance of added latency, not a number of milliseconds)"
)]
pub struct LatencyFault {
    #[serde(default)]
    pub dist: Dist,
    pub ms: Range,
    pub p: f64,
}

/// The faults of the tools one entry names. At most one of deny, stale,
/// an error, empty and partial strikes a call (their probabilities add up
/// to at most 1); latency is drawn on its own and may join any of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFaults {
    #[serde(default)]
    pub deny: f64,
    #[serde(default)]
    pub empty: f64,
    /// Probability of each error kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection: Option<InjectionFault>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencyFault>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<PartialFault>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<StaleFault>,
    /// Tool name or glob; the first entry that matches a call applies.
    pub tool: String,
}

/// A checked fault profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Seconds the agent's wall clock is off by, drawn once per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew_s: Option<Range>,
    pub tools: Vec<ToolFaults>,
    /// `[fuzz.user]`: faults on the user's side of a conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserFaults>,
}

/// One fault of a schedule: the `nth` call (from 1) of `tool` is answered
/// through `action`, `latency_ms` later than usual.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedFault {
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    pub nth: u64,
    pub tool: String,
}

/// Faults named outright instead of drawn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew_s: Option<i64>,
    pub faults: Vec<PlannedFault>,
}

impl Schedule {
    /// How many faults it injects (the clock skew counts as one).
    pub fn len(&self) -> usize {
        self.faults.len() + usize::from(self.clock_skew_s.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a fuzz run's faults come from; recorded in the bundle header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultSource {
    /// Drawn from this profile with the run's seed.
    Profile(Profile),
    /// Exactly these.
    Schedule(Schedule),
}

/// `[fuzz]` as written, with places for error messages.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileToml {
    #[serde(default)]
    clock_skew_s: Option<toml::Spanned<Range>>,
    #[serde(default)]
    tools: Vec<toml::Spanned<ToolFaults>>,
    #[serde(default)]
    user: Option<toml::Spanned<UserFaults>>,
}

// --- [fuzz.user]: faults on the user's side of a conversation --------------
//
// A slow user (virtual latency), a user who goes silent (ends the
// conversation), a user who answers with one of several alternative lines,
// and approvers who deny with a probability. They are drawn like tool
// faults and recorded against the pseudo-tools `user.say` and
// `approval.request`, so schedules, shrinking and reproducers treat them
// like any other fault.

/// The pseudo-tool user turns are counted and scheduled under.
pub const USER_TURN: &str = "user.say";
/// The pseudo-tool approval requests are counted and scheduled under.
pub const APPROVAL: &str = "approval.request";
/// The pseudo-tool the user's calls of their own tools (`[[user_tools]]`)
/// are counted and scheduled under.
pub const USER_TOOL: &str = "user.tools";

/// Another line instead of the user's own, with a probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyFault {
    pub p: f64,
    /// The lines one is drawn from (uniformly).
    pub with: Vec<String>,
}

/// The `[fuzz.user]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserFaults {
    /// The user takes this long to answer (virtual time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencyFault>,
    /// Probability the user goes silent: the conversation ends there.
    #[serde(default)]
    pub silent: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<ReplyFault>,
    /// Probability an approval request is denied whatever the rules say.
    #[serde(default)]
    pub deny_approvals: f64,
    /// Probability a call the user makes of their own tools fails
    /// (`unavailable`, changing nothing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_errors: f64,
}

fn is_zero(p: &f64) -> bool {
    *p == 0.0
}

impl UserFaults {
    /// The faults that strike the simulated user's turns and own tools, by
    /// name, with probabilities above 0 (not `deny_approvals`: the agent
    /// asks for approvals with or without a user).
    fn of_the_user(&self) -> Vec<&'static str> {
        let p = |p: Option<f64>, name| (p.unwrap_or(0.0) > 0.0).then_some(name);
        [
            p(Some(self.silent), "silent"),
            p(self.reply.as_ref().map(|r| r.p), "reply"),
            p(self.latency_ms.as_ref().map(|l| l.p), "latency_ms"),
            p(Some(self.tool_errors), "tool_errors"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    pub fn check(&self) -> Result<(), String> {
        let prob = |what: &str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(p)
            } else {
                Err(format!(
                    "[fuzz.user] {what} = {p} is not a probability; give a number from 0 to 1"
                ))
            }
        };
        let mut total = prob("silent", self.silent)?;
        if let Some(r) = &self.reply {
            total += prob("reply.p", r.p)?;
            if r.with.is_empty() {
                return Err("[fuzz.user] reply.with needs at least one line".into());
            }
        }
        if total > 1.0 + 1e-9 {
            return Err(format!(
                "[fuzz.user] silent and reply.p add up to {total}; at most one strikes a turn, so they must add up to 1 or less"
            ));
        }
        prob("deny_approvals", self.deny_approvals)?;
        prob("tool_errors", self.tool_errors)?;
        if let Some(l) = &self.latency_ms {
            prob("latency_ms.p", l.p)?;
            if l.ms.lo < 0 || l.ms.lo > l.ms.hi {
                return Err(format!(
                    "[fuzz.user] latency_ms.ms = [{}, {}] must be a range from 0 or more",
                    l.ms.lo, l.ms.hi
                ));
            }
            super::recorded::check_ms("[fuzz.user] the high end of latency_ms.ms", l.ms.hi as u64)?;
        }
        Ok(())
    }
}

/// The problem of a case's `[fuzz.user]` when the case has no `[user]`:
/// its faults of the user's turns and tools never strike, since no
/// simulated user answers (what no run can meet, decision 0412).
pub fn user_faults_without_user(
    path: &Path,
    source: &str,
    doc: &ProfileToml,
    table: &str,
) -> Option<InputError> {
    let u = doc.user.as_ref()?;
    let faults = u.get_ref().of_the_user();
    (!faults.is_empty() && super::recorded::new_rules_apply()).then(|| {
        InputError::at(
            path,
            source,
            u.span().start,
            format!(
                "{table} {}: the case has no [user], so no simulated user answers the agent or calls its tools for them to strike; add a [user], or leave them out",
                faults.join(", ")
            ),
        )
    })
}

/// Check a profile written in `source` (the case file or a faults file)
/// against the world it will run on. Without a world (`check` of a faults
/// file alone, which names none) every rule is checked but those that
/// read the world: that each tool is one of its tools, a stale `field` one
/// its rows can hold, an injection's vector one it declares. Each entry is
/// checked on its own and every problem listed, at its line (decision
/// 0194), in the order they are written.
///
/// `placed` is where the profile is in `source` (a case's `[fuzz]` table;
/// `None` for a faults file, which is one whole).
pub fn check(
    path: &Path,
    source: &str,
    (doc, placed): (&ProfileToml, Option<usize>),
    world: Option<&World>,
    table: &str,
) -> Result<Profile, Vec<InputError>> {
    let at = |offset: usize, m: String| InputError::at(path, source, offset, m);
    if doc.tools.is_empty() && doc.clock_skew_s.is_none() && doc.user.is_none() {
        let m = format!(
            "{table} injects nothing; add [[{}tools]] entries, clock_skew_s or a user table",
            if table == "[fuzz]" { "fuzz." } else { "" }
        );
        return Err(vec![match placed {
            Some(offset) => at(offset, m),
            None => InputError::new(path, m),
        }]);
    }
    let mut problems = Vec::new();
    if let Some(skew) = &doc.clock_skew_s
        && let Err(m) = check_skew(skew.get_ref(), table)
    {
        problems.push(at(skew.span().start, m));
    }
    // A skew of none: counted as a fault in every run's mix, and told as
    // the cause of a failure (`the agent's clock is 0 s ahead`).
    if let Some(skew) = &doc.clock_skew_s
        && (skew.get_ref().lo, skew.get_ref().hi) == (0, 0)
        && super::recorded::new_rules_apply()
    {
        problems.push(at(
            skew.span().start,
            format!(
                "{table} clock_skew_s = 0 skews nothing; leave it out, or give the range of seconds to draw from ([-60, 60])"
            ),
        ));
    }
    let mut tools: Vec<ToolFaults> = Vec::with_capacity(doc.tools.len());
    for entry in &doc.tools {
        let t = entry.get_ref();
        let problem = check_tool(t, world).err().or_else(|| {
            if !super::recorded::new_rules_apply() {
                return None;
            }
            let whole = |m| (None, m);
            match world {
                Some(world) => shadowed(t, &tools, world).map(whole),
                // Without the world's tools, an entry of a name written
                // before is taken by it whatever the world (`check` of a
                // faults file passed it, and `fuzz` refused it).
                None => (tools.iter().any(|e| e.tool == t.tool)).then(|| {
                    whole(format!(
                        "`{}`: an entry before it names the same tool, and the first entry whose tool matches a call applies, so it never strikes; merge the two, or drop it",
                        t.tool
                    ))
                }),
            }
        });
        match problem {
            Some((key, m)) => {
                let start = key
                    .and_then(|k| crate::sections::key_in(source, entry.span().start, k))
                    .unwrap_or(entry.span().start);
                problems.push(at(start, format!("{table}: {m}")))
            }
            None => tools.push(t.clone()),
        }
    }
    if let Some(u) = &doc.user
        && let Err(m) = u.get_ref().check()
    {
        problems.push(at(u.span().start, format!("{table}: {m}")));
    }
    // A user table of no fault: what no run can meet (decision 0412), as
    // a `[[tools]]` entry of none is.
    if let Some(u) = &doc.user
        && u.get_ref().of_the_user().is_empty()
        && u.get_ref().deny_approvals == 0.0
        && super::recorded::new_rules_apply()
    {
        let named = match table {
            "[fuzz]" => "[fuzz.user]".to_string(),
            other => format!("{other}: [user]"),
        };
        problems.push(at(
            u.span().start,
            format!("{named} injects nothing; give one of silent, reply, latency_ms, deny_approvals or tool_errors a probability above 0, or leave the table out"),
        ));
    }
    if !problems.is_empty() {
        problems.sort_by_key(|e| e.line);
        return Err(problems);
    }
    Ok(Profile {
        clock_skew_s: doc.clock_skew_s.as_ref().map(|s| *s.get_ref()),
        tools,
        user: doc.user.as_ref().map(|u| u.get_ref().clone()),
    })
}

/// A `clock_skew_s` range's problem: its ends out of order, or beyond a
/// century either way (more would take the clock out of the years RFC 3339
/// can write).
fn check_skew(r: &Range, table: &str) -> Result<(), String> {
    const MAX_SKEW_S: i64 = 100 * 366 * 86_400;
    if r.lo > r.hi {
        return Err(format!(
            "{table} clock_skew_s = [{}, {}]: the low end is above the high end",
            r.lo, r.hi
        ));
    }
    if r.lo < -MAX_SKEW_S || r.hi > MAX_SKEW_S {
        return Err(format!(
            "{table} clock_skew_s = [{}, {}] is out of range; skew by at most {MAX_SKEW_S} seconds (a century) either way",
            r.lo, r.hi
        ));
    }
    Ok(())
}

/// Why the entry `t` never strikes: every tool of `world` it names is
/// named by an entry before it, and the first entry whose tool matches a
/// call applies (what no run can meet is refused, decision 0412).
fn shadowed(t: &ToolFaults, earlier: &[ToolFaults], world: &World) -> Option<String> {
    let named: Vec<&str> = (world.tools.iter())
        .map(|w| w.name.as_str())
        .filter(|n| world::glob_match(&t.tool, n))
        .collect();
    let takes = |n: &str| earlier.iter().find(|e| world::glob_match(&e.tool, n));
    let mut by: Vec<&str> = (named.iter())
        .map(|n| takes(n).map(|e| e.tool.as_str()))
        .collect::<Option<_>>()?;
    by.sort_unstable();
    by.dedup();
    Some(format!(
        "`{}`: every tool it names ({}) is taken by an entry before it (`{}`), and the first entry whose tool matches a call applies, so it never strikes; put it before, or drop it",
        t.tool,
        named.join(", "),
        by.join("`, `")
    ))
}

/// What is wrong with the entry `t`, with the key of the entry it is
/// about (`None` for the entry as a whole).
fn check_tool(t: &ToolFaults, world: Option<&World>) -> Result<(), (Option<&'static str>, String)> {
    let whole = |m: String| (None, m);
    let name = &t.tool;
    if name.is_empty() {
        return Err((
            Some("tool"),
            "`tool` is empty: name a tool of the world, or a glob (`list_*`, `*`)".into(),
        ));
    }
    if let Some(world) = world
        && !world::names_a_tool(name, &world.tools)
    {
        return Err((
            Some("tool"),
            format!("tool `{name}` names no tool of {}", world.reference()),
        ));
    }
    let prob = |key: &'static str, what: &str, p: f64| {
        if (0.0..=1.0).contains(&p) {
            Ok(p)
        } else {
            Err((
                Some(key),
                format!("`{name}`: {what} = {p} is not a probability; give a number from 0 to 1"),
            ))
        }
    };
    let range = |key: &'static str, what: &str, r: &Range| {
        if r.lo < 0 || r.lo > r.hi {
            Err((
                Some(key),
                format!(
                    "`{name}`: {what} = [{}, {}] must be a range from a low end of 0 or more to a high end at least as large",
                    r.lo, r.hi
                ),
            ))
        } else {
            Ok(())
        }
    };
    let of = |key: &'static str| move |m: String| (Some(key), format!("`{name}`: {m}"));
    let mut total = prob("deny", "deny", t.deny)? + prob("empty", "empty", t.empty)?;
    for (kind, p) in &t.error {
        kind.parse::<ErrorKind>()
            .map_err(|why| of("error")(format!("error.{kind} {why}")))?;
        total += prob("error", &format!("error.{kind}"), *p)?;
    }
    if let Some(s) = &t.stale {
        total += prob("stale", "stale.p", s.p)?;
        range("stale", "stale.age_s", &s.age_s)?;
        super::recorded::check_s("the high end of stale.age_s", s.age_s.hi as u64)
            .map_err(of("stale"))?;
        if let Some(field) = &s.field
            && let Some(world) = world
            && super::recorded::new_rules_apply()
            && let Some(m) =
                super::inject::stale_field_problem(name, field, &world.tools, &world.initial)
        {
            return Err(of("stale")(m));
        }
    }
    if let Some(p) = &t.partial {
        total += prob("partial", "partial.p", p.p)?;
        // Without a world (`check` of a faults file alone), what no world
        // makes right (an empty `fields`) is told all the same.
        let none = world::state::State::default();
        let (tools, initial) = world.map_or((&[][..], &none), |w| (&w.tools[..], &w.initial));
        if super::recorded::new_rules_apply()
            && let Some(m) = super::inject::partial_problem(name, &p.fields, tools, initial)
        {
            return Err(of("partial")(m));
        }
        if let Some(e) = &p.error {
            e.parse::<ErrorKind>()
                .map_err(|why| of("partial")(format!("partial.error = \"{e}\" {why}")))?;
        }
    }
    if let Some(i) = &t.injection {
        total += prob("injection", "injection.p", i.p)?;
        if let Some(world) = world {
            world::injection::check_target(
                i.vector.as_deref(),
                &world.injection_vectors,
                &world.reference(),
            )
            .map_err(of("injection"))?;
        }
    }
    let mut latency = 0.0;
    if let Some(l) = &t.latency_ms {
        latency = prob("latency_ms", "latency_ms.p", l.p)?;
        range("latency_ms", "latency_ms.ms", &l.ms)?;
        super::recorded::check_ms("the high end of latency_ms.ms", l.ms.hi as u64)
            .map_err(of("latency_ms"))?;
    }
    if total > 1.0 + 1e-9 {
        return Err(whole(format!(
            "`{name}`: deny, stale, error, empty, partial and injection add up to {total}; at most one of them strikes a call, so they must add up to 1 or less"
        )));
    }
    if total == 0.0 && latency == 0.0 {
        return Err(whole(format!(
            "`{name}` has no fault with a probability above 0; give one of deny, stale, error, empty, partial, injection, latency_ms"
        )));
    }
    Ok(())
}

/// Load a faults file (`--faults FILE`): the body of a `[fuzz]` table,
/// checked against `world`.
pub fn load_file(path: &Path, world: &World, case_has_user: bool) -> Result<Profile, InputError> {
    let bytes = crate::bounded::read(path, crate::bounded::DOCUMENT)
        .map_err(|e| InputError::new(path, format!("cannot read the faults file: {e}")))?;
    let source = InputError::utf8(path, bytes)?;
    crate::toml_tokens::check(path, &source)?;
    let doc: ProfileToml = toml::from_str(&source).map_err(|e| {
        // A case given as the faults file (it said "unknown field `clock`").
        let keys = toml::from_str::<super::discover::Keys>(&source);
        match keys.is_ok_and(|k| k.world.is_some()) {
            true => InputError::new(
                path,
                "is a case (it names a `world`), not a faults file: give a file of `[[tools]]` faults, `clock_skew_s` or `[user]`, or leave --faults out to use the case's own [fuzz]",
            ),
            false => InputError::toml(path, &source, &e),
        }
    })?;
    // Its `[user]` faults would never strike a case without a user (the
    // campaign reported its pass rate as if they had).
    if !case_has_user
        && let Some(e) = user_faults_without_user(path, &source, &doc, "faults file [user]")
    {
        return Err(e);
    }
    check(path, &source, (&doc, None), Some(world), "faults file")
        .map_err(|mut all| all.swap_remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A faults file checked alone (`check`, no world) is told what no
    /// world makes right, as `fuzz --faults` tells it: an entry of a name
    /// written before, an empty `partial.fields`, an empty tool name
    /// (`check` passed all three).
    #[test]
    fn a_faults_file_alone_is_told_what_no_world_makes_right() {
        for (text, said) in [
            (
                "[[tools]]\ntool = \"a\"\nempty = 0.5\n[[tools]]\ntool = \"a\"\ndeny = 0.5\n",
                "4:1: faults file: `a`: an entry before it names the same tool",
            ),
            (
                "[[tools]]\ntool = \"a\"\npartial = { p = 0.5, fields = [], error = \"timeout\" }\n",
                "3:1: faults file: `a`: partial.fields is empty",
            ),
            (
                "[[tools]]\ntool = \"\"\ndeny = 0.5\n",
                "2:1: faults file: `tool` is empty",
            ),
        ] {
            let doc: ProfileToml = toml::from_str(text).unwrap();
            let all =
                check(Path::new("f.toml"), text, (&doc, None), None, "faults file").unwrap_err();
            assert_eq!(all.len(), 1, "{all:?}");
            assert!(
                all[0].to_string().starts_with(&format!("f.toml:{said}")),
                "{}",
                all[0]
            );
        }
        let two = "[[tools]]\ntool = \"a\"\nempty = 0.5\n[[tools]]\ntool = \"b*\"\ndeny = 0.5\n";
        let doc: ProfileToml = toml::from_str(two).unwrap();
        check(Path::new("f.toml"), two, (&doc, None), None, "faults file").unwrap();
    }

    #[test]
    fn ranges_are_one_number_or_two() {
        #[derive(Deserialize)]
        struct R {
            r: Range,
        }
        let one: R = toml::from_str("r = 5").unwrap();
        assert_eq!(one.r, Range { lo: 5, hi: 5 });
        let two: R = toml::from_str("r = [1, 9]").unwrap();
        assert_eq!(two.r, Range { lo: 1, hi: 9 });
        assert_eq!(serde_json::to_string(&two.r).unwrap(), "[1,9]");
        let back: Range = serde_json::from_str("[1,9]").unwrap();
        assert_eq!(back, two.r);
        // What is wrong, and what to write (not serde's "did not match any
        // variant of untagged enum").
        for (bad, said) in [
            ("r = 'abc'", "invalid type: string \"abc\""),
            ("r = [1, 2, 3]", "invalid length 3"),
            ("r = [1]", "invalid length 1"),
        ] {
            let e = toml::from_str::<R>(bad).err().unwrap();
            let m = e.message();
            assert!(m.contains(said), "{bad}: {m}");
            assert!(
                m.contains("an integer, or [lo, hi]: two integers"),
                "{bad}: {m}"
            );
        }
        // An element that is no integer is said so (`i64`, which a case's
        // error turns into words).
        let e = toml::from_str::<R>("r = [1, 'x']").err().unwrap();
        assert!(
            e.message()
                .contains("invalid type: string \"x\", expected i64")
        );
    }

    #[test]
    fn sources_round_trip_through_json() {
        let s = FaultSource::Schedule(Schedule {
            clock_skew_s: Some(-30),
            faults: vec![PlannedFault {
                action: Action::Error(ErrorKind::Timeout),
                latency_ms: Some(5),
                nth: 2,
                tool: "get_alert".into(),
            }],
        });
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.starts_with("{\"schedule\":"), "{text}");
        assert_eq!(serde_json::from_str::<FaultSource>(&text).unwrap(), s);
    }
}
