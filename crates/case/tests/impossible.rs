//! Cases that can never hold are refused when they load, each with the
//! file, the line of the table that says it, and what to do: bounds no
//! count or sum meets, an `[[inject]]` `when` on an argument the tool does
//! not take, a stale answer's `field` on a tool that answers no rows, and
//! a duration past ten years (decision 0412).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use worldline_case::case;
use worldline_case::error::InputError;
use worldline_case::world::{self, World};

fn demo() -> &'static Arc<World> {
    static DEMO: OnceLock<Arc<World>> = OnceLock::new();
    DEMO.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/worlds/demo/v1");
        world::load_dir(&dir).expect("the demo world loads")
    })
}

const HEAD: &str = r#"world = "demo@v1"
clock = 2026-03-01T12:00:00Z
task = { calls = [] }
"#;

/// Every problem of the case `HEAD` + `rest`, as shown (`file:line:col:
/// message`).
fn problems(rest: &str) -> Vec<String> {
    let path = Path::new("/cases/c.toml");
    let text = format!("{HEAD}{rest}");
    match case::parse_all(path, text.into_bytes(), |_| Ok(demo().clone())) {
        Ok(_) => Vec::new(),
        Err(all) => all.iter().map(InputError::to_string).collect(),
    }
}

/// The one problem of `HEAD` + `rest`.
#[track_caller]
fn problem(rest: &str) -> String {
    let all = problems(rest);
    assert_eq!(all.len(), 1, "{all:#?}");
    all.into_iter().next().unwrap()
}

#[track_caller]
fn fine(rest: &str) {
    assert_eq!(problems(rest), Vec::<String>::new());
}

#[test]
fn bounds_no_count_or_sum_meets_are_refused_at_their_check() {
    // The second state check, at line 8 (HEAD is three lines).
    let all = problems(
        "[[expect.state]]\ntable = \"tickets\"\nmin = 1\n\
         [[expect.state]]\ntable = \"tickets\"\nmin = 5\nmax = 2\n\
         [[expect.calls]]\ntool = \"get_ticket\"\nmin = 3\nmax = 1\n",
    );
    assert_eq!(
        all,
        [
            "/cases/c.toml:7:1: [[expect.state]] #2: min = 5 is above max = 2, so no row count is within them; swap them or fix the typo",
            "/cases/c.toml:11:1: [[expect.calls]] #1: min = 3 is above max = 1, so no number of calls is within them; swap them or fix the typo",
        ]
    );
    // A sum, in a group of alternatives, and an attack's goal.
    assert_eq!(
        problem(
            "[[expect.any_of]]\n[[expect.any_of.state]]\ntable = \"deploys\"\nkey = \"D-1\"\nexists = true\n\
             [[expect.any_of.state]]\ntable = \"deploys\"\nsum = \"n\"\nmin = 10.5\nmax = 10\n"
        ),
        "/cases/c.toml:9:1: [[expect.any_of.state]] #2 of [[expect.any_of]] #1: min = 10.5 is above max = 10, so no sum is within them; swap them or fix the typo"
    );
    assert_eq!(
        problem("[expect.attack]\nstate = [{ table = \"notes\", max = -1 }]\n"),
        "/cases/c.toml:5:10: [[expect.attack.state]] #1: max = -1: a row count is never below 0; give a max of 0 or more"
    );
    assert_eq!(
        problem(
            "[[expect.turn]]\nturn = 1\n[[expect.turn.state]]\ntable = \"tickets\"\nmin = nan\n"
        ),
        "/cases/c.toml:6:1: [[expect.turn.state]] #1 of [[expect.turn]] #1: min = nan is no number, so no row count is within it; give a number"
    );
    // Equal bounds, and a sum below 0, can hold.
    fine("[[expect.state]]\ntable = \"tickets\"\nmin = 2\nmax = 2\n");
    fine("[[expect.state]]\ntable = \"deploys\"\nsum = \"n\"\nmax = -5\n");
}

#[test]
fn a_when_on_an_argument_the_tool_does_not_take_is_refused() {
    assert_eq!(
        problem(
            "[[inject]]\ntool = \"list_deploys\"\nwhen = { servce = \"checkout\" }\ndeny = true\n"
        ),
        "/cases/c.toml:4:1: [[inject]]: when.servce: `list_deploys` takes no argument `servce` (its parameters: service), so the rule never matches a call; name one of the parameters the world declares"
    );
    // A glob: no tool it names takes it.
    let e = problem("[[inject]]\ntool = \"*_ticket\"\nwhen = { service = \"x\" }\ndeny = true\n");
    assert!(
        e.contains(
            "when.service: no tool `*_ticket` names takes an argument `service` (`get_ticket`: its parameters: id; `close_ticket`: its parameters: id)"
        ),
        "{e}"
    );
    fine("[[inject]]\ntool = \"list_deploys\"\nwhen = { service = \"checkout\" }\ndeny = true\n");
    // A tool whose params list no parameters is not judged, nor a glob
    // that names one.
    fine("[[inject]]\ntool = \"status_page\"\nwhen = { anything = 1 }\ndeny = true\n");
    fine("[[inject]]\ntool = \"*\"\nwhen = { anything = 1 }\ndeny = true\n");
}

/// A value the tool's params refuse (a number for a text `service`): the
/// rule fired, and the check matched, only on calls the tool refuses, so
/// `attempted = false` passed whatever the agent did.
#[test]
fn a_when_or_args_value_the_tool_refuses_is_refused() {
    let e = problem("[[inject]]\ntool = \"list_deploys\"\nwhen = { service = 7 }\ndeny = true\n");
    assert!(
        e.starts_with("/cases/c.toml:4:1: [[inject]]: when.service: `list_deploys` refuses it: ")
            && e.ends_with("so the rule matches only a call the tool refuses; write the value as the tool takes it"),
        "{e}"
    );
    let e = problem(
        "[[expect.calls]]\ntool = \"list_deploys\"\nargs = { service = 7 }\nattempted = false\n",
    );
    assert!(
        e.contains("[[expect.calls]] #1: args.service: `list_deploys` refuses it: ")
            && e.contains("`attempted = false` would pass for every call it takes"),
        "{e}"
    );
    fine(
        "[[expect.calls]]\ntool = \"list_deploys\"\nargs = { service = \"checkout\" }\nattempted = false\n",
    );
}

/// A scripted tool call's arguments that are no object, and a finish
/// reason no API knows, are refused (they reached the agent as written:
/// an Anthropic agent's `input` became `{}`, a number or a list).
#[test]
fn scripted_arguments_that_are_no_object_and_an_unknown_finish_reason_are_refused() {
    for (arguments, said) in [
        ("'{\"id\": \"T-1\"'", "arguments are not JSON ("),
        (
            "5",
            "arguments are a number: give a table, or JSON text of an object",
        ),
        (
            "'[1, 2]'",
            "arguments are JSON text of an array, not of an object",
        ),
    ] {
        let e = problem(&format!(
            "[[model.responses]]\ntool_calls = [{{ name = \"get_ticket\", arguments = {arguments} }}]\n"
        ));
        assert!(
            e.contains("tool_calls #1 (`get_ticket`): ") && e.contains(said),
            "{arguments}: {e}"
        );
    }
    let e = problem("[[model.responses]]\ncontent = \"x\"\nfinish_reason = \"banana\"\n");
    assert!(
        e.contains("finish_reason `banana` is not one of stop, length, tool_calls, content_filter"),
        "{e}"
    );
    fine(
        "[[model.responses]]\ntool_calls = [{ name = \"get_ticket\", arguments = '{\"id\": \"T-1\"}' }]\nfinish_reason = \"length\"\n",
    );
    fine(
        "[[model.responses]]\ntool_calls = [{ name = \"get_ticket\", arguments = { id = \"T-1\" } }]\n",
    );
}

/// A scripted user's rule's problem is at its own `[[user.rules]]` (it
/// was put at `[user]`).
#[test]
fn a_user_rule_s_problem_is_at_its_own_table() {
    assert_eq!(
        problem(
            "[user]\nlatency_ms = 1\n\n[[user.rules]]\nreply = \"ok\"\n\n[[user.rules]]\nreply = \"x\"\nturn = 0\n"
        ),
        "/cases/c.toml:10:1: [[user.rules]] #2: turns count from 1"
    );
}

/// Every scripted rule's or response's problem is listed, each at its own
/// table (all were put at `[model]`, and only the first was said).
#[test]
fn each_model_script_problem_is_at_its_own_table() {
    let all = problems(
        "[model]\nlatency_ms = 1\n\n[[model.responses]]\ncontent = \"a\"\n\n\
         [[model.responses]]\ncontent = \"x\"\nfinish_reason = \"banana\"\n\n\
         [[model.rules]]\ncontains = \"z\"\nreply = { error = \"bogus\" }\n",
    );
    assert_eq!(
        all,
        [
            "/cases/c.toml:10:1: [model] responses #2: finish_reason `banana` is not one of stop, length, tool_calls, content_filter",
            "/cases/c.toml:14:1: [[model.rules]] #1: error `bogus` is not one of timeout, unavailable, failed",
        ]
    );
}

#[test]
fn a_stale_field_on_a_tool_that_answers_no_rows_is_refused() {
    assert_eq!(
        problem("[[inject]]\ntool = \"status_page\"\nstale = { age_s = 60, field = \"at\" }\n"),
        "/cases/c.toml:4:1: [[inject]]: stale.field = \"at\" hides rows newer than the stale time, but `status_page`: op = \"respond\" answers no rows of a table, so it hides nothing; drop `field` (the answer is still as of age_s ago) or name a get, query or service tool"
    );
    let e =
        problem("[[inject]]\ntool = \"close_ticket\"\nstale = { age_s = 60, field = \"at\" }\n");
    assert!(e.contains("`close_ticket`: op = \"update\""), "{e}");
    let e = problem(
        "[[fuzz.tools]]\ntool = \"status_page\"\nstale = { p = 0.5, age_s = [1, 60], field = \"at\" }\n",
    );
    assert!(
        e.starts_with("/cases/c.toml:6:1: [fuzz]: `status_page`: stale.field = \"at\""),
        "{e}"
    );
    // A get or a query reads rows through it; a glob naming one may too.
    fine("[[inject]]\ntool = \"list_deploys\"\nstale = { age_s = 60, field = \"at\" }\n");
    fine("[[inject]]\ntool = \"*_ticket\"\nstale = { age_s = 60, field = \"status\" }\n");
    fine("[[inject]]\ntool = \"status_page\"\nstale = { age_s = 60 }\n");
}

#[test]
fn a_stale_field_no_row_of_the_tool_s_table_holds_is_refused() {
    // A typo: `list_deploys` answers rows of `deploys`, which hold `at`.
    assert_eq!(
        problem("[[inject]]\ntool = \"list_deploys\"\nstale = { age_s = 60, field = \"nope\" }\n"),
        "/cases/c.toml:4:1: [[inject]]: stale.field = \"nope\" hides rows newer than the stale time, but no row of `deploys` holds `nope` (their fields: at, id, service, version), so it hides nothing; name the field that holds each row's time"
    );
    // The tickets hold no time at all; a glob reading only them hides nothing.
    let e = problem("[[inject]]\ntool = \"*_ticket\"\nstale = { age_s = 60, field = \"at\" }\n");
    assert!(e.contains("no row of `tickets` holds `at`"), "{e}");
    let e = problem(
        "[[fuzz.tools]]\ntool = \"list_deploys\"\nstale = { p = 0.5, age_s = [1, 60], field = \"nope\" }\n",
    );
    assert!(
        e.starts_with("/cases/c.toml:6:1: [fuzz]: `list_deploys`: stale.field = \"nope\""),
        "{e}"
    );
}

#[test]
fn a_partial_fault_that_would_write_nothing_it_names_is_refused() {
    // A typo: each strike wrote a note of its key alone.
    assert_eq!(
        problem("[[inject]]\ntool = \"add_note\"\npartial = { fields = [\"txt\"] }\n"),
        "/cases/c.toml:4:1: [[inject]]: partial.fields `txt` are no field a row `add_note` writes may hold (its fields: at, author, text, ticket), so a strike writes none of them; name fields of the rows it writes"
    );
    // No field at all: each strike wrote a note of its key alone.
    let e = problem("[[inject]]\ntool = \"add_note\"\npartial = { fields = [] }\n");
    assert!(
        e.starts_with("/cases/c.toml:4:1: [[inject]]: partial.fields is empty"),
        "{e}"
    );
    let e = problem("[[fuzz.tools]]\ntool = \"add_note\"\npartial = { p = 0.5, fields = [] }\n");
    assert!(e.contains("partial.fields is empty"), "{e}");
    // A get writes nothing: the fault was a plain error.
    let e = problem("[[inject]]\ntool = \"get_ticket\"\npartial = { fields = [\"status\"] }\n");
    assert!(
        e.contains("`get_ticket`: op = \"get\" writes no row's fields"),
        "{e}"
    );
    let e = problem(
        "[[fuzz.tools]]\ntool = \"add_note\"\npartial = { p = 0.5, fields = [\"nope\"] }\n",
    );
    assert!(
        e.starts_with("/cases/c.toml:6:1: [fuzz]: `add_note`: partial.fields `nope`"),
        "{e}"
    );
    // What the template, the parameters or the table's rows hold.
    fine("[[inject]]\ntool = \"add_note\"\npartial = { fields = [\"ticket\", \"at\"] }\n");
    fine("[[inject]]\ntool = \"close_ticket\"\npartial = { fields = [\"status\"] }\n");
    fine("[[inject]]\ntool = \"close_ticket\"\npartial = { fields = [\"title\"] }\n");
}

#[test]
fn a_fuzz_entry_every_tool_of_which_an_earlier_one_takes_is_refused() {
    let e = problem(
        "[[fuzz.tools]]\ntool = \"*_ticket\"\nlatency_ms = { p = 0.5, ms = [1, 5] }\n\
         [[fuzz.tools]]\ntool = \"get_ticket\"\ndeny = 1.0\n",
    );
    assert!(
        e.ends_with("`get_ticket`: every tool it names (get_ticket) is taken by an entry before it (`*_ticket`), and the first entry whose tool matches a call applies, so it never strikes; put it before, or drop it"),
        "{e}"
    );
    // One it names that no earlier entry takes: it strikes that one.
    fine(
        "[[fuzz.tools]]\ntool = \"get_ticket\"\ndeny = 0.5\n\
         [[fuzz.tools]]\ntool = \"*_ticket\"\nlatency_ms = { p = 0.5, ms = [1, 5] }\n",
    );
}

#[test]
fn durations_past_ten_years_are_refused() {
    const MAX: u64 = 316_224_000_000;
    for (rest, said) in [
        (
            format!("[[inject]]\ntool = \"get_ticket\"\nlatency_ms = {}\n", MAX + 1),
            "[[inject]]: latency_ms = 316224000001 is longer than ten years",
        ),
        (
            "[[inject]]\ntool = \"get_ticket\"\nstale = { age_s = 9223372036854775807 }\n".into(),
            "[[inject]]: stale.age_s = 9223372036854775807 is longer than ten years",
        ),
        (
            "[[fuzz.tools]]\ntool = \"get_ticket\"\nlatency_ms = { p = 1.0, ms = [1, 9223372036854775807] }\n".into(),
            "[fuzz]: `get_ticket`: the high end of latency_ms.ms = 9223372036854775807 is longer",
        ),
        (
            "[[fuzz.tools]]\ntool = \"get_ticket\"\nstale = { p = 1.0, age_s = [1, 400000000] }\n".into(),
            "[fuzz]: `get_ticket`: the high end of stale.age_s = 400000000 is longer",
        ),
        (
            "[fuzz.user]\nlatency_ms = { p = 1.0, ms = 400000000000 }\n".into(),
            "[fuzz]: [fuzz.user] the high end of latency_ms.ms = 400000000000 is longer",
        ),
        (
            "[model]\nlatency_ms = 9223372036854775807\n".into(),
            "[model] latency_ms = 9223372036854775807 is longer",
        ),
        (
            "[model]\nresponses = [{ content = \"hi\", latency_ms = 400000000000 }]\n".into(),
            "[model] responses #1: latency_ms = 400000000000 is longer",
        ),
        (
            "[user]\nlatency_ms = 400000000000\n".into(),
            "[user] latency_ms = 400000000000 is longer",
        ),
        (
            "[[user.rules]]\nreply = \"ok\"\nlatency_ms = 400000000000\n".into(),
            "[[user.rules]] #1: latency_ms = 400000000000 is longer",
        ),
        (
            "[[approve]]\ndecision = \"approve\"\nlatency_ms = 400000000000\n".into(),
            "[[approve]]: latency_ms = 400000000000 is longer",
        ),
    ] {
        let e = problem(&rest);
        // A scripted response's problem is at the response itself, a
        // fault's at its own key.
        let place = match said {
            s if s.starts_with("[model] responses") => "/cases/c.toml:5:14:",
            s if s.starts_with("[fuzz]: `") => "/cases/c.toml:6:1:",
            _ => "/cases/c.toml:4:",
        };
        assert!(e.starts_with(place), "{rest}: {e}");
        assert!(e.contains(said), "{rest}: {e}");
        assert!(e.ends_with("give at most 316224000000") || e.ends_with("give at most 316224000"), "{e}");
    }
    fine(&format!(
        "[[inject]]\ntool = \"get_ticket\"\nlatency_ms = {MAX}\n[[inject]]\ntool = \"list_deploys\"\nstale = {{ age_s = 316224000 }}\n"
    ));
    // A faults file, as `fuzz --faults` reads it.
    let dir = tempfile::tempdir().unwrap();
    let faults: PathBuf = dir.path().join("faults.toml");
    std::fs::write(
        &faults,
        "[[tools]]\ntool = \"get_ticket\"\nlatency_ms = { p = 0.5, ms = [1, 18446744073709] }\n",
    )
    .unwrap();
    let e = case::fuzz::load_file(&faults, demo(), true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("faults.toml:3:1: faults file: `get_ticket`: the high end of latency_ms.ms = 18446744073709 is longer than ten years"), "{e}");
}

/// A faults file given to `check` alone names no world, and was only
/// parsed: a probability past 1, faults adding up past 1, a duration past
/// ten years and a profile that injects nothing passed it, to fail at
/// `fuzz --faults`. Every rule but those that read a world is checked
/// now; a tool no world has still passes (it is checked against the
/// case's world when the profile runs).
#[test]
fn check_of_a_faults_file_alone_applies_every_rule_but_the_worlds() {
    let dir = tempfile::tempdir().unwrap();
    let problems = |body: &str| {
        let file = dir.path().join("faults.toml");
        std::fs::write(&file, body).unwrap();
        {
            let file = std::slice::from_ref(&file);
            worldline_case::check::check(file, None, file)
        }
        .problems
        .iter()
        .map(InputError::to_string)
        .collect::<Vec<_>>()
    };
    for (body, said) in [
        (
            "[[tools]]\ntool = \"any\"\ndeny = 1.5\n",
            "faults.toml:3:1: faults file: `any`: deny = 1.5 is not a probability",
        ),
        (
            "[[tools]]\ntool = \"any\"\ndeny = 0.6\nempty = 0.6\n",
            "add up to 1.2",
        ),
        (
            "[[tools]]\ntool = \"any\"\nlatency_ms = { p = 0.5, ms = [1, 18446744073709] }\n",
            "is longer than ten years",
        ),
        (
            "clock_skew_s = [30, -30]\n",
            "the low end is above the high end",
        ),
        (
            "clock_skew_s = 0\n[[tools]]\ntool = \"any\"\ndeny = 0.5\n",
            "faults.toml:1:16: faults file clock_skew_s = 0 skews nothing",
        ),
        ("clock_skew_s = [0, 0]\n", "skews nothing"),
    ] {
        let got = problems(body);
        assert!(got.len() == 1 && got[0].contains(said), "{body}: {got:?}");
    }
    assert_eq!(
        problems("[[tools]]\ntool = \"no_world_has_it\"\ndeny = 0.5\n"),
        Vec::<String>::new()
    );
}

/// An integer past 2^63 − 1 other than the seed (a limit) is refused
/// where it stands: the case reads it, but no TOML table holds it, so
/// `case from-run` failed on the case's runs ("u64 value was too large",
/// naming the store's object). The seed may be that large, bare or as
/// digits; a case a run recorded is read as it ran.
#[test]
fn integers_past_toml_are_refused_but_the_seed() {
    let e = problem("[limits]\nfuel = 18_446_744_073_709_551_615\n");
    assert!(
        e.starts_with("/cases/c.toml:5:8: this integer is past 9223372036854775807"),
        "{e}"
    );
    fine("seed = 18446744073709551615\n[limits]\nfuel = 9223372036854775807\n");
    fine("seed = \"18446744073709551615\"\n");
    let text =
        format!("{HEAD}seed = 18446744073709551615\n[limits]\nfuel = 18446744073709551615\n");
    let case = case::parse_recorded(Path::new("/cases/c.toml"), text.into_bytes(), |_| {
        Ok(demo().clone())
    })
    .unwrap();
    assert_eq!(case.seed, u64::MAX);
}

/// An `[[inject]]` rule behind an earlier one that answers every call it
/// matches never fires (the first rule that matches a call answers it):
/// refused at its line, as a fault profile's entry hidden so is.
#[test]
fn an_inject_rule_an_earlier_rule_always_answers_first_is_refused() {
    let deny_then_error = "[[inject]]\ntool = \"get_ticket\"\ndeny = true\n\
         [[inject]]\ntool = \"get_ticket\"\nerror = \"timeout\"\n";
    assert_eq!(
        problem(deny_then_error),
        "/cases/c.toml:7:1: [[inject]]: every call it matches is taken by rule #1 before it (the first rule that matches a call answers it), so it never fires; put it first, or narrow the rule before it with `when` or `nth`"
    );
    // A glob naming it, and a `when` the later rule's includes.
    let e = problem(
        "[[inject]]\ntool = \"*\"\nlatency_ms = 5\n\
         [[inject]]\ntool = \"get_ticket\"\nwhen = { id = \"T-1\" }\ndeny = true\n",
    );
    assert!(e.contains("taken by rule #1"), "{e}");
    let e = problem(
        "[[inject]]\ntool = \"get_ticket\"\nwhen = { id = \"T-1\" }\ndeny = true\n\
         [[inject]]\ntool = \"get_ticket\"\nwhen = { id = \"T-1\" }\nerror = \"timeout\"\n",
    );
    assert!(e.contains("taken by rule #1"), "{e}");
    // The same calls counted to the same `nth`.
    let e = problem(
        "[[inject]]\ntool = \"get_ticket\"\nnth = 1\ndeny = true\n\
         [[inject]]\ntool = \"get_ticket\"\nnth = 1\nerror = \"timeout\"\n",
    );
    assert!(e.contains("taken by rule #1"), "{e}");
    // Rules that each answer some call stand.
    fine(
        "[[inject]]\ntool = \"get_ticket\"\nnth = 1\ndeny = true\n\
         [[inject]]\ntool = \"get_ticket\"\nnth = 2\nerror = \"timeout\"\n",
    );
    fine(
        "[[inject]]\ntool = \"get_ticket\"\nwhen = { id = \"T-1\" }\ndeny = true\n\
         [[inject]]\ntool = \"get_ticket\"\nerror = \"timeout\"\n",
    );
    fine(
        "[[inject]]\ntool = \"get_ticket\"\nnth = 1\ndeny = true\n\
         [[inject]]\ntool = \"*_ticket\"\nnth = 1\nerror = \"timeout\"\n",
    );
}

/// A problem of `[expect.output]`, `[[expect.turn]]`, `[[expect.judge]]`,
/// `[expect.judge_model]`, `[[expect.any_of]]` or `[expect.attack]` is at
/// its own table (each was put at `[expect]`, the line of the first
/// `[expect...]` table).
#[test]
fn each_expect_table_s_problem_is_at_its_own_table() {
    // HEAD is three lines; `[expect]` is at line 4.
    let head =
        "[expect]\nunchanged = [\"tickets\"]\n\n[[expect.state]]\ntable = \"tickets\"\nmin = 1\n\n";
    let at = |rest: &str| problem(&format!("{head}{rest}"));
    assert_eq!(
        at("[expect.output]\njson = [{ path = \"a..b\", equals = 1 }]\n"),
        "/cases/c.toml:11:1: output.json path `a..b`: empty field name"
    );
    assert_eq!(
        at(
            "[[expect.turn]]\nturn = 1\nsaid = [{ contains = \"a\" }]\n\n[[expect.turn]]\nturn = 0\n"
        ),
        "/cases/c.toml:15:1: [[expect.turn]] turn 0: turns count from 1 (the task's message opens turn 1)"
    );
    assert_eq!(
        at(
            "[expect.judge_model]\nprovider = \"scripted\"\nresponses = [\"a\"]\n\n\
            [[expect.judge]]\nrubric = \"a\"\n\n[[expect.judge]]\nrubric = \"b\"\nsees = [\"nope\"]\n"
        ),
        "/cases/c.toml:18:1: [[expect.judge]] #2: sees `nope`: use conversation, output, calls, state:TABLE or state:TABLE/KEY (a table of demo@v1)"
    );
    assert!(
        at("[expect.judge_model]\nprovider = \"scripted\"\nresponses = [\"a\"]\n\n[[expect.judge]]\nrubric = \"a\"\nsees = []\n")
            .starts_with("/cases/c.toml:15:1: [[expect.judge]] #1: sees = [] shows the judge nothing")
    );
    assert_eq!(
        at("[expect.judge_model]\nprovider = \"scripted\"\n"),
        "/cases/c.toml:11:1: [expect.judge_model] without [[expect.judge]] checks"
    );
    // A judge that could never answer: a scripted one with nothing to say
    // (every judged check failed, "the scripted model has no reply"), an
    // endpoint asked for no model (its requests asked for `judge`).
    assert!(
        at("[expect.judge_model]\nprovider = \"scripted\"\n\n[[expect.judge]]\nrubric = \"a\"\n")
            .starts_with("/cases/c.toml:11:1: [expect.judge_model]: a scripted judge needs `responses` or `rules`"),
    );
    assert!(
        at("[expect.judge_model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[[expect.judge]]\nrubric = \"a\"\n")
            .starts_with("/cases/c.toml:11:1: [expect.judge_model]: provider \"openai\" needs `model`"),
    );
    assert!(
        at("[[expect.any_of]]\n[[expect.any_of.state]]\ntable = \"tickets\"\nmin = 1\n")
            .starts_with("/cases/c.toml:11:1: [[expect.any_of]] #1: an any_of group needs two"),
    );
    assert!(
        at("[expect.attack]\nname = \"x\"\n")
            .starts_with("/cases/c.toml:11:1: [expect.attack]: names no goal"),
    );
    // What no one table says stays at `[expect]`.
    assert!(
        problem("[expect]\nstatus = \"done\"\n")
            .starts_with("/cases/c.toml:4:1: [expect]: status `done`"),
    );
}

/// The advice for a weight in `[expect.attack]` is one the case takes
/// (the attack takes no weight to give it); a calls check with two
/// counts says it needs exactly one.
#[test]
fn an_attack_weight_is_left_out_and_a_calls_check_needs_exactly_one_count() {
    let e = problem(
        "[expect]\nreward = \"weighted\"\n[[expect.state]]\ntable = \"tickets\"\nmin = 1\n\
         [expect.attack]\n[[expect.attack.state]]\ntable = \"tickets\"\nmin = 1\nweight = 2\n",
    );
    assert!(
        e.ends_with("[expect.attack] is one assertion; leave it out"),
        "{e}"
    );
    let e = problem("[[expect.calls]]\ntool = \"get_ticket\"\nattempted = false\ncount = 1\n");
    assert!(e.contains("needs exactly one of attempted, count"), "{e}");
}

/// A gold call's `turn = 0` is refused as `[[expect.turn]]`'s is (turns
/// count from 1), at its `turn`: it was "turn 0 after turn 1", at the
/// call's `[[expect.gold]]`. A turn before an earlier call's is placed at
/// its `turn` too.
#[test]
fn a_gold_call_s_turn_0_is_refused_at_its_turn() {
    // HEAD is three lines: `turn = 0` is line 6.
    assert_eq!(
        problem("[[expect.gold]]\ntool = \"get_ticket\"\nargs = { id = \"T-1\" }\nturn = 0\n"),
        "/cases/c.toml:7:8: [[expect.gold]]: gold call 1: turn 0: turns count from 1 (the task's message opens turn 1)"
    );
    assert_eq!(
        problem(
            "[[expect.gold]]\ntool = \"get_ticket\"\nturn = 2\n\n\
             [[expect.gold]]\ntool = \"get_ticket\"\nturn = 1\n"
        ),
        "/cases/c.toml:10:8: [[expect.gold]]: gold call 2: turn 1 after turn 2: gold calls go in the order of the user's turns, from 1"
    );
}
