//! Property tests of the readers of results and of the small languages a
//! user types: `merge` over shard reports whose numbers and partitions were
//! edited (real shards of a suite and of a campaign, written by the binary
//! once), `--partition`, `test --filter`, `runs --since`, and a fork's
//! `--respond`/`--set` text, and the UI's routes and query strings. Each
//! must give a value or an error, never panic, and a merge it accepts never
//! shows impossible figures.

use crate::common;
use crate::ui_support;

use common::{guest, temp_dir, worldline, worlds_dir, write_case};
use proptest::prelude::*;
use serde_json::Value;
use std::sync::OnceLock;
use worldline_report::suite::SuiteSummary;

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// Two `test --partition count:i/2 --json` shards of four cases, and two
/// `fuzz --partition hash:i/2 --json` shards of a 12-run campaign.
fn shards() -> &'static (Vec<Value>, Vec<Value>) {
    static SHARDS: OnceLock<(Vec<Value>, Vec<Value>)> = OnceLock::new();
    SHARDS.get_or_init(|| {
        let dir = temp_dir();
        let store = dir.path().join("store");
        let cases = dir.path().join("cases");
        std::fs::create_dir_all(&cases).unwrap();
        for seed in 1..=4 {
            let verb = if seed % 2 == 0 { "close_ticket" } else { "get_ticket" };
            write_case(
                &cases,
                &format!("c{seed}"),
                &format!("world = \"demo@v1\"\nseed = {seed}\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{{ tool = \"{verb}\", args = {{ id = \"T-1\" }} }}] }}\n[[expect.state]]\ntable = \"tickets\"\nkey = \"T-1\"\nfield = \"status\"\nequals = \"open\"\n"),
            );
        }
        let (caller, worlds) = (guest("caller-agent"), worlds_dir());
        let tests = (1..=2)
            .map(|i| {
                let p = format!("count:{i}/2");
                let args = ["test", s(&cases), "--agent", s(&caller), "--worlds", s(&worlds)];
                let mut args = args.to_vec();
                args.extend(["--repeat", "2", "--partition", &p, "--json"]);
                worldline(&store, args).json().clone()
            })
            .collect();
        let case = write_case(
            dir.path(),
            "fz",
            "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 2 }\n\n[[fuzz.tools]]\ntool = \"*\"\nerror = { timeout = 0.3 }\n",
        );
        let hostile = guest("hostile-agent");
        let fuzz = (1..=2)
            .map(|i| {
                let p = format!("hash:{i}/2");
                let args = ["fuzz", s(&case), "--agent", s(&hostile), "--worlds", s(&worlds)];
                let mut args = args.to_vec();
                args.extend(["--runs", "6", "--repeat", "2", "--partition", &p, "--json"]);
                worldline(&store, args).json().clone()
            })
            .collect();
        (tests, fuzz)
    })
}

/// Every number in a JSON value, by JSON pointer.
fn numbers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Number(_) => out.push(at),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                numbers(x, format!("{at}/{i}"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                numbers(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        _ => {}
    }
}

/// Edits: (which shard, which number, its new value).
type Edits = Vec<(usize, usize, u64)>;

fn edits() -> impl Strategy<Value = Edits> {
    let value = prop_oneof![0u64..5, any::<u64>()];
    prop::collection::vec((0usize..2, any::<usize>(), value), 1..4)
}

/// The shards with `edits` applied to their numbers and `partition` (when
/// given) written over the second shard's.
fn edited(shards: &[Value], edits: &Edits, partition: Option<(&str, &str)>) -> Vec<Value> {
    let mut docs = shards.to_vec();
    for &(shard, which, value) in edits {
        let mut paths = Vec::new();
        numbers(&docs[shard], String::new(), &mut paths);
        let path = &paths[which % paths.len()];
        *docs[shard].pointer_mut(path).unwrap() = value.into();
    }
    if let Some((pointer, text)) = partition {
        *docs[1].pointer_mut(pointer).unwrap() = text.into();
    }
    docs
}

const PARTITIONS: &[&str] = &[
    "count:2/2",
    "count:1/2",
    "hash:2/2",
    "count:3/2",
    "count:0/2",
    "count:2/3",
    "x:y/z",
    "2/2",
    "count:2/0",
    "",
    "count:/",
    "count:18446744073709551616/2",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn a_merged_suite_never_shows_impossible_figures(e in edits(), p in 0..PARTITIONS.len(), edit_partition: bool) {
        let (tests, _) = shards();
        let partition = edit_partition.then_some(("/shard/partition", PARTITIONS[p]));
        let docs = edited(tests, &e, partition);
        let Ok(parsed) = docs.into_iter().map(serde_json::from_value::<SuiteSummary>).collect::<Result<Vec<_>, _>>() else {
            return Ok(());
        };
        if let Ok(m) = SuiteSummary::merge(parsed) {
            prop_assert_eq!(m.total, 4);
            prop_assert_eq!(m.passed + m.failed + m.skipped, m.total);
            for c in &m.cases {
                prop_assert!(c.passes <= c.runs && c.runs <= m.repeat, "{} {} {}", c.passes, c.runs, m.repeat);
            }
            for pk in &m.pass_k {
                prop_assert!((0.0..=1.0).contains(&pk.value), "{}", pk.value);
            }
        }
    }

    #[test]
    fn a_merged_campaign_never_shows_impossible_figures(e in edits(), p in 0..PARTITIONS.len(), edit_partition: bool) {
        let (_, fuzz) = shards();
        let text = PARTITIONS[p].replace("count", "hash");
        let partition = edit_partition.then_some(("/partition", text.as_str()));
        let docs = edited(fuzz, &e, partition);
        let Ok(parsed) = docs.into_iter().map(serde_json::from_value::<worldline_report::fuzz::FuzzReport>).collect::<Result<Vec<_>, _>>() else {
            return Ok(());
        };
        if let Ok(m) = worldline_report::fuzz::merge(&parsed) {
            let s = &m.summary;
            prop_assert_eq!(s.runs, m.seeds * m.repeat);
            prop_assert!(s.passed <= s.runs, "{} > {}", s.passed, s.runs);
            prop_assert!((0.0..=1.0).contains(&s.pass_rate), "{}", s.pass_rate);
            let grouped: u64 = m.groups.iter().map(|g| g.count).sum();
            prop_assert_eq!(grouped, s.runs - s.passed);
        }
    }

    #[test]
    fn partitions_parse_or_say_why(text in "[a-z:/0-9]{0,12}") {
        match worldline_case::partition::Partition::parse(&text) {
            Ok(p) => {
                let (shard, total) = p.shard_of();
                prop_assert!(1 <= shard && shard <= total);
                prop_assert_eq!(worldline_case::partition::Partition::parse(&p.to_string()), Ok(p));
            }
            Err(m) => prop_assert!(m.contains('`'), "{}", m),
        }
    }

    #[test]
    fn typed_inputs_give_a_value_or_an_error(text in "[a-z0-9_*?()!&|=:.,/\\[\\]{}\" -]{0,24}") {
        let _ = worldline_engine::suite::select::Filter::parse(&text);
        let _ = worldline_store::index::query::parse_time(&text, 1_700_000_000);
        let _ = worldline_runtime::mediate::parse_patch(&text);
        let edits = worldline_engine::fork::check::EditText {
            respond: Some(text.clone()),
            set: vec![text.clone()],
            ..Default::default()
        };
        let _ = edits.parse();
    }
}

/// `s` with every byte but letters and digits percent-encoded.
fn encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The UI's GET routes with query strings of its own keys and any values
/// (and paths with any id or event number): always a page or a 4xx, never
/// a server error, and the server still answers afterwards.
#[test]
fn ui_routes_and_query_strings_answer_a_page_or_a_client_error() {
    use proptest::test_runner::{Config, TestRunner};
    let dir = temp_dir();
    let store = dir.path().join("store");
    let fixture = ui_support::fixture(&store);
    let ui = ui_support::Server::start(&store, &[]);
    let keys = [
        "status",
        "grade",
        "case",
        "world",
        "agent",
        "signature",
        "q",
        "page",
        "a",
        "b",
        "since",
        "until",
        "parent",
        "limit",
        "only",
        "at",
    ];
    let routes = prop_oneof![
        Just("/".to_string()),
        Just("/diff".to_string()),
        Just("/campaigns".to_string()),
        Just(format!("/run/{}", fixture.failed)),
        any::<u32>().prop_map({
            let id = fixture.failed.clone();
            move |n| format!("/run/{id}/event/{}", n % 64)
        }),
        "[ -~]{0,40}".prop_map(|id| format!("/run/{}", encoded(&id))),
        "[ -~]{0,40}".prop_map(|id| format!("/campaign/{}", encoded(&id))),
        ("[ -~]{0,20}", "[ -~]{0,12}").prop_map(|(id, n)| format!(
            "/run/{}/event/{}",
            encoded(&id),
            encoded(&n)
        )),
    ];
    let query = proptest::collection::vec((0..keys.len(), "\\PC{0,30}"), 0..5);
    let mut runner = TestRunner::new(Config {
        cases: 150,
        ..Config::default()
    });
    runner
        .run(&(routes, query), |(route, pairs)| {
            let q: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}={}", keys[*k], encoded(v)))
                .collect();
            let path = match q.is_empty() {
                true => route.clone(),
                false => format!("{route}?{}", q.join("&")),
            };
            let r = ui.get(&path);
            prop_assert!(
                r.status == 200 || (400..500).contains(&r.status),
                "GET {path}: {} {}",
                r.status,
                r.body
            );
            Ok(())
        })
        .unwrap();
    assert_eq!(ui.get("/").status, 200, "the server still answers");
}
