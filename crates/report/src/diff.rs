//! `diff`: two runs side by side, as text (where their timelines first
//! differ, each side's event in one line, how their final states differ,
//! their outputs and how each ended when those differ, and a note when
//! they are runs of different cases or worlds) or as the `diff --json`
//! document.

use super::history::{mark, vtime};
use super::timeline::{Cut, short_call, summary_cut, writes_cut};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::io::{self, Write};
use worldline_engine::grade::diff::StateDiff;
use worldline_engine::grade::final_state;
use worldline_engine::replay::RecordedRun;
use worldline_log::log::{Event, Held};
use worldline_log::redact::Redactor;

/// One of the runs compared.
pub struct Side<'a> {
    pub run: &'a str,
    /// How many events it recorded.
    pub events: usize,
    /// What the run returned.
    pub output: Option<&'a str>,
    /// The rules it ran under (decision 0423).
    pub rules: u32,
    /// How it ended ([`Ending`]).
    pub ending: &'a Ending,
}

/// How a run ended: its status (`incomplete` for a run without a footer)
/// and its outcome, its failure signature or `passed`, as `runs` and
/// `repro` give them. Two runs of the same events and state may end
/// otherwise (one `out_of_fuel`, the other `timeout`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    pub status: String,
    pub outcome: String,
}

impl Ending {
    /// How the run of `footer` ended.
    pub fn of(footer: Option<&worldline_log::log::Footer>) -> Ending {
        match footer {
            None => Ending {
                status: "incomplete".into(),
                outcome: "incomplete".into(),
            },
            Some(f) => Ending {
                status: f.status.as_str().into(),
                outcome: worldline_log::log::signature::of_footer(f)
                    .unwrap_or_else(|| "passed".into()),
            },
        }
    }

    /// The status, with the outcome when it says more.
    fn shown(&self) -> String {
        match self.outcome == self.status {
            true => self.status.clone(),
            false => format!("{} ({})", self.status, super::field(&self.outcome)),
        }
    }
}

/// Two runs compared.
pub struct Compared<'a> {
    pub a: Side<'a>,
    pub b: Side<'a>,
    /// The first event at which the timelines differ (`None`: the same
    /// events).
    pub first: Option<First>,
    /// The final states, a to b.
    pub state: &'a StateDiff,
    /// Whether values were hidden by a redaction policy.
    pub redacted_view: bool,
    /// What the reader should know first: the runs are of different cases
    /// or worlds ([`Sides::notes`]).
    pub notes: &'a [String],
}

/// Where two runs first differ: the event's number and each run's event
/// there, whole (`None`: that run had ended).
pub struct First {
    pub index: usize,
    pub a: Option<Event>,
    pub b: Option<Event>,
}

/// Whether two events differ as `diff` compares them: in call, request,
/// response, writes, effect, injected fault or time (a latency injected
/// into one run changed no line of its event, and `diff` said "same
/// events").
fn differ(x: &Event, y: &Event) -> bool {
    (&x.call, &x.request, &x.response, &x.writes) != (&y.call, &y.request, &y.response, &y.writes)
        || (x.effect, &x.injected, x.vtime_ns) != (y.effect, &y.injected, y.vtime_ns)
}

/// The first event where two runs held compact (decision 0380) differ,
/// or where one ends, if any; with `redactor` (which has learned both
/// runs, [`learn`]), as it shows them. Events whose requests are held
/// alike ([`Held::same_request`]) are compared as held; the others are
/// put back one at a time (each run's requests whole at once were its
/// conversation once per model call: a long run's diff grew with the
/// square of its length).
pub fn first_difference(
    a: &mut Held,
    b: &mut Held,
    mut redactor: Option<&mut Redactor>,
) -> Option<First> {
    // Every event before this one the same in both as recorded (not only
    // as redacted): a request held alike is then the same whole.
    let mut alike = true;
    for i in 0..a.len().max(b.len()) {
        let seq = i as u64;
        let held = match (a.get(seq), b.get(seq)) {
            (Some(x), Some(y)) => !differ(x, y),
            _ => false,
        };
        if alike && held && a.same_request(b, seq) {
            continue;
        }
        let mut x = a.event(seq).map(Cow::into_owned);
        let mut y = b.event(seq).map(Cow::into_owned);
        let both = |x: &Option<Event>, y: &Option<Event>| match (x, y) {
            (Some(x), Some(y)) => !differ(x, y),
            _ => false,
        };
        let recorded = both(&x, &y);
        if let Some(r) = redactor.as_deref_mut() {
            x.iter_mut().chain(y.iter_mut()).for_each(|e| r.event(e));
        }
        if !both(&x, &y) {
            return Some(First {
                index: i,
                a: x,
                b: y,
            });
        }
        alike &= recorded;
    }
    None
}

/// Two recorded runs as `diff` and the UI's diff page show them.
pub struct Sides {
    /// Each run's event count.
    pub events: [usize; 2],
    pub first: Option<First>,
    /// The final states, a to b.
    pub state: StateDiff,
    /// What each run returned.
    pub outputs: [Option<String>; 2],
    /// How each run ended.
    pub endings: [Ending; 2],
    /// Said before the comparison: the runs are of different cases (by
    /// name, or by the case's hash) or different worlds (by name and
    /// version, or by the world's hash), whose states and grades differ
    /// for that alone (a diff of two worlds was a long state diff without
    /// a word why).
    pub notes: Vec<String>,
}

/// Compare two runs held compact through `redactor`: the worlds they met
/// and left learnt first (what a `state` path hides there is hidden
/// where their events quote it: a list's answer showed it whole), then
/// their events; the first difference, the final states and the outputs
/// as the policy shows them.
pub fn sides(a: &RecordedRun, b: &RecordedRun, mut redactor: Option<&mut Redactor>) -> Sides {
    let mut fa = final_state(&a.case.world.initial, a.events());
    let mut fb = final_state(&b.case.world.initial, b.events());
    let (mut ea, mut eb) = (a.held(), b.held());
    let mut outputs = [a, b].map(|r| r.bundle.footer.as_ref().and_then(|f| f.output.clone()));
    if let Some(r) = redactor.as_deref_mut() {
        for s in [&a.case.world.initial, &b.case.world.initial, &fa, &fb] {
            r.learn_state(s);
        }
        learn(r, [&mut ea, &mut eb]);
    }
    let first = first_difference(&mut ea, &mut eb, redactor.as_deref_mut());
    if let Some(r) = redactor.as_deref_mut() {
        r.state(&mut fa);
        r.state(&mut fb);
        for o in outputs.iter_mut().flatten() {
            *o = r.output(o);
        }
    }
    let [ha, hb] = [a, b].map(|r| &r.bundle.header);
    let mut shown = |t: &str| match redactor.as_deref_mut() {
        Some(r) => r.text(t),
        None => t.to_string(),
    };
    let mut notes = Vec::new();
    let short = |h: &str| h.get(..12).unwrap_or(h).to_string();
    if ha.case != hb.case {
        notes.push(format!(
            "the runs are of different cases: a `{}`, b `{}`",
            shown(&ha.case),
            shown(&hb.case)
        ));
    } else if ha.case_hash != hb.case_hash {
        notes.push(format!(
            "the runs are of different versions of case `{}` (case hashes {} and {})",
            shown(&ha.case),
            short(&ha.case_hash),
            short(&hb.case_hash)
        ));
    }
    if ha.world != hb.world {
        notes.push(format!(
            "the runs are of different worlds: a `{}`, b `{}` (their final states differ by what each world holds too)",
            ha.world, hb.world
        ));
    } else if ha.world_hash != hb.world_hash {
        notes.push(format!(
            "the runs are of different contents of world `{}` (world hashes {} and {}; their final states differ by what each holds too)",
            ha.world,
            short(&ha.world_hash),
            short(&hb.world_hash)
        ));
    }
    // A failure's signature names a check, as the view's policy shows it.
    let endings = [a, b].map(|r| {
        let mut e = Ending::of(r.bundle.footer.as_ref());
        e.outcome = shown(&e.outcome);
        e
    });
    Sides {
        events: [ea.len(), eb.len()],
        first,
        state: worldline_engine::grade::diff::diff(&fa, &fb),
        outputs,
        endings,
        notes,
    }
}

/// Teach `r` what two runs held compact hide, showing nothing (a value
/// one run hides later is then hidden wherever either quotes it): each
/// compact model call learnt from what it holds (decision 0426; putting
/// back every call's whole conversation made a long run's diff page
/// quadratic in its length).
pub fn learn(r: &mut Redactor, runs: [&mut Held; 2]) {
    for held in runs {
        r.learn_held(held);
    }
}

/// `diff --json`: the first divergence (each side's call, request,
/// response and writes), the final states' difference, each run's
/// output and the rules each ran under.
pub fn json(c: &Compared<'_>) -> Value {
    let side = |e: Option<&Event>| {
        e.map(|e| json!({"call": e.call, "request": e.request, "response": e.response, "writes": e.writes, "effect": e.effect, "injected": e.injected, "vtime_ns": e.vtime_ns}))
    };
    json!({
        "a": c.a.run, "b": c.b.run,
        "events": [c.a.events, c.b.events],
        "first_divergence": c.first.as_ref().map(|f| json!({"index": f.index, "a": side(f.a.as_ref()), "b": side(f.b.as_ref())})),
        "final_state_diff": c.state,
        "notes": c.notes,
        "outcomes": [c.a.ending.outcome, c.b.ending.outcome],
        "outputs": [c.a.output, c.b.output],
        "redacted_view": c.redacted_view,
        "rules": [c.a.rules, c.b.rules],
        "status": [c.a.ending.status, c.b.ending.status],
    })
}

/// When an event happened, its effect and the fault injected into it, as
/// `history` shows them.
fn when(e: &Event) -> String {
    format!(
        "{}  {}{}",
        vtime(e.vtime_ns),
        format!("{:?}", e.effect).to_lowercase(),
        mark(e)
    )
}

/// `diff`: the runs, where they first differ (values cut as `cut` says)
/// and their final states.
pub fn write(out: &mut impl Write, c: &Compared<'_>, cut: Cut) -> io::Result<()> {
    writeln!(
        out,
        "a: {}  ({} events)\nb: {}  ({} events)",
        c.a.run, c.a.events, c.b.run, c.b.events
    )?;
    for n in c.notes {
        writeln!(out, "note: {}", super::field(n))?;
    }
    match &c.first {
        None => writeln!(out, "same events")?,
        Some(First { index: i, a, b }) => {
            let (x, y) = (a.as_ref(), b.as_ref());
            // As `history` shows it: the call, then what it did (a clock
            // read was its answer alone).
            let line = |e: Option<&Event>| {
                e.map_or("(none)".into(), |e| {
                    let summary = summary_cut(e, cut);
                    format!(
                        "{}  {}",
                        short_call(&e.call),
                        worldline_case::shown::one_line(&summary)
                    )
                })
            };
            writeln!(out, "first difference at event {i}:")?;
            writeln!(out, "  a: {}", line(x))?;
            writeln!(out, "  b: {}", line(y))?;
            // Events alike in their lines may differ in what they wrote
            // (a fork's `--set` patch): both lines were all it showed.
            if let (Some(x), Some(y)) = (x, y)
                && x.writes != y.writes
            {
                writeln!(out, "  a wrote: {}", writes_cut(x, cut))?;
                writeln!(out, "  b wrote: {}", writes_cut(y, cut))?;
            }
            // Or in when they happened, their effect or a fault injected
            // into one (a latency: the lines alike, every later time not).
            if let (Some(x), Some(y)) = (x, y)
                && ((&x.injected, x.vtime_ns) != (&y.injected, y.vtime_ns)
                    || (x.effect != y.effect && line(Some(x)) == line(Some(y))))
            {
                writeln!(out, "  a at: {}", when(x))?;
                writeln!(out, "  b at: {}", when(y))?;
            }
            // Or in a request or an answer the lines do not show (a model
            // request's `temperature`): two equal lines were all it said.
            if let (Some(x), Some(y)) = (x, y)
                && line(Some(x)) == line(Some(y))
            {
                for (what, a, b) in [
                    ("request", &x.request, &y.request),
                    ("response", &x.response, &y.response),
                ] {
                    for d in worldline_engine::replay::json_diff(a, b) {
                        let d = worldline_case::shown::one_line(&d);
                        writeln!(out, "  {what} {}", super::timeline::cut_text(&d, cut))?;
                    }
                }
            }
        }
    }
    if c.state.is_empty() {
        writeln!(out, "final states: identical")?;
    } else {
        writeln!(out, "final state, a -> b:")?;
        // Each line at most as long as `run` and `grade` show one (a
        // 2M-character value was printed whole).
        for l in c.state.lines() {
            writeln!(out, "  {}", super::field(&l))?;
        }
    }
    // What each run returned (a run may answer otherwise with the same
    // calls and state: it was said only in `--json`).
    if c.outputs_differ() {
        let shown = |o: Option<&str>| o.map_or("(none)".into(), super::field);
        writeln!(out, "outputs differ:")?;
        writeln!(out, "  a: {}", shown(c.a.output))?;
        writeln!(out, "  b: {}", shown(c.b.output))?;
    }
    // How each ended (two runs of the same events may not end alike: one
    // out of fuel, the other stopped by the watchdog).
    if c.endings_differ() {
        writeln!(out, "endings differ:")?;
        writeln!(out, "  a: {}", c.a.ending.shown())?;
        writeln!(out, "  b: {}", c.b.ending.shown())?;
    }
    Ok(())
}

impl Compared<'_> {
    /// Whether the runs returned different outputs.
    pub fn outputs_differ(&self) -> bool {
        // The same JSON value written with other spacing (a native
        // agent's `json.dumps`) is the same output, as grading reads it.
        let value = |o: Option<&str>| o.and_then(|o| serde_json::from_str::<Value>(o).ok());
        match (value(self.a.output), value(self.b.output)) {
            (Some(a), Some(b)) => a != b,
            _ => self.a.output != self.b.output,
        }
    }

    /// Whether the runs ended otherwise: in their status or outcome.
    pub fn endings_differ(&self) -> bool {
        self.a.ending != self.b.ending
    }

    /// Whether the runs differ at all: in an event, the final state, what
    /// they returned, or how they ended (`diff` exits 1 then).
    pub fn differ(&self) -> bool {
        self.first.is_some()
            || !self.state.is_empty()
            || self.outputs_differ()
            || self.endings_differ()
    }
}
