//! Long-horizon runs (issue 40) on the real binary: a run of 200 model
//! calls, each sending the whole conversation, records in bytes linear in
//! the conversation (each request as what it appended to the one before),
//! reads back whole, replays `identical`, and forks at its last tool call.
//! 200 calls keep a debug build's test under half a minute (the agent
//! sends 200 requests of up to 400 KB); `benches/long_horizon.rs` runs
//! the family up to 1,600 calls in a release build under the same bound.

use crate::common;
use common::long;
use serde_json::Value;
use std::ffi::OsStr;

const CALLS: usize = 200;
const MODEL_CALL: &str = "worldline:agent/model.complete";

#[test]
fn a_200_call_run_records_linear_bytes_replays_and_forks_at_the_end() {
    let dir = common::temp_dir();
    let (worlds, case) = long::write(dir.path(), CALLS);
    let store = dir.path().join("store");
    let agent = common::guest("looper-agent");
    let out = common::run_in(&store, &case, &agent, &worlds);
    out.expect_code(0);
    assert_eq!(out.json()["run_status"], "completed", "{out}");
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let bundle = out.bundle();

    // The bound: three times the documents the model read.
    let bytes = std::fs::metadata(&bundle).unwrap().len();
    let bound = 3 * long::unique_bytes(CALLS);
    assert!(bytes <= bound, "{bytes} bytes recorded, over {bound}");
    let text = std::fs::read_to_string(&bundle).unwrap();
    let compact = text.lines().filter(|l| l.contains("\"extends\":")).count();
    assert_eq!(
        compact,
        CALLS - 1,
        "every request after the first extends the one before"
    );

    // Read back (the chain checked over whole requests), the last request
    // holds the whole conversation: system, user, and per tool call the
    // model's reply and the document.
    let b = worldline::log::bundle::read(&bundle).unwrap();
    let model: Vec<_> = b.events.iter().filter(|e| e.call == MODEL_CALL).collect();
    assert_eq!(model.len(), CALLS);
    let last = model.last().unwrap().request["request"]["messages"]
        .as_array()
        .unwrap();
    assert_eq!(last.len(), 2 + 2 * (CALLS - 1));
    let first_doc: Value = serde_json::from_str(last[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(first_doc["text"], long::doc_text(0));

    common::replays_identical(&store, &id);

    // Fork at the last document read, denied: the prefix is the parent's
    // (whole requests equal), and the fork replays identical too.
    let at = b
        .events
        .iter()
        .rposition(|e| e.call == "worldline:agent/tools.call")
        .unwrap();
    let fork = common::worldline(
        &store,
        [
            "fork",
            &id,
            "--at",
            &at.to_string(),
            "--deny",
            "get_doc",
            "--json",
        ]
        .map(OsStr::new),
    );
    fork.expect_code(0);
    let forked = worldline::log::bundle::read(&fork.bundle()).unwrap();
    assert_eq!(
        forked.events[..at],
        b.events[..at],
        "the prefix is the parent's"
    );
    assert_eq!(forked.events[at].effect, worldline::log::Effect::Denied);
    common::replays_identical(&store, fork.json()["run_id"].as_str().unwrap());
}
