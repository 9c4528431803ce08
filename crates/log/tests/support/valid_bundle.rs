//! A valid bundle to mutate: a header, chained events and a footer (the
//! log's and the engine's reader tests, `#[path]`-included).

use worldline_log::log::bundle::{self, Footer, Header, Status};
use worldline_log::log::{Effect, Event, Recorder};

/// A bundle with a header, `n` chained events and a footer.
pub fn valid_bundle(n: u64) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.jsonl");
    let header = Header {
        agent_sha256: "a".repeat(64),
        case: "c".into(),
        case_hash: "b".repeat(64),
        engine_hash: "e".repeat(64),
        env: None,
        episode_id: None,
        format: bundle::FORMAT.into(),
        fuzz: None,
        group: None,
        harness_version: "0.1.0".into(),
        isolation: None,
        limits: Default::default(),
        model_overrides: Default::default(),
        user_model_overrides: Default::default(),
        model_seed: None,
        native: None,
        origin: None,
        parent: None,
        redacted: None,
        rules: None,
        seed: 7,
        world: "demo@v1".into(),
        world_hash: "d".repeat(64),
    };
    std::fs::write(&path, bundle::header_line(&header)).unwrap();
    let file = std::fs::File::options().append(true).open(&path).unwrap();
    let mut rec = Recorder::to_file(file);
    for seq in 0..n {
        rec.append(Event {
            call: "worldline:agent/tools.call".into(),
            effect: Effect::Read,
            fuel: 100 * seq,
            hash: String::new(),
            injected: None,
            request: serde_json::json!({"name": "get_ticket", "args": {"id": "T-1"}}),
            response: serde_json::json!({"ok": {"id": "T-1", "n": seq}}),
            seq,
            vtime_ns: 1000 * seq,
            writes: vec![],
        })
        .unwrap();
    }
    let (file, events, chain_hash) = rec.finish().unwrap();
    let mut footer = Footer {
        backtrace: vec![],
        chain_hash,
        error: None,
        events: events.len() as u64,
        final_state_hash: "f".repeat(64),
        fuel: 1,
        grade: None,
        header_hash: None,
        hash: String::new(),
        output: Some("{}".into()),
        replayable: true,
        status: Status::Completed,
        stderr: String::new(),
        stdout: "hi\n".into(),
        truncated: None,
        truncated_bytes: 0,
    };
    footer.hash = bundle::footer_hash(&footer);
    bundle::finish(file.unwrap(), &footer, true).unwrap();
    std::fs::read(&path).unwrap()
}
