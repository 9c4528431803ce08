//! The `recorded` provider: model answers from earlier runs, keyed by the
//! SHA-256 of the canonical request. Its cassette is recordings (bundles) —
//! one file or a folder of them (the store's runs by default) — read in
//! file-name order when the first model call comes, so a run that never calls the
//! model never reads them. The n-th identical request of a run gets the
//! n-th recorded answer (the last one once they run out).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use worldline_case::canon;
use worldline_log::log::{Call, bundle};

/// One recorded answer and where it came from.
struct RecordedAnswer {
    run: String,
    seq: u64,
    response: Value,
}

/// The `recorded` provider's cassette: the recordings it answers from,
/// indexed by request hash once the first model call needs them.
pub(crate) struct HashCassette {
    source: PathBuf,
    /// Bundle this run is writing (not a recording to answer from).
    own: Option<PathBuf>,
    answers: Option<BTreeMap<String, Vec<RecordedAnswer>>>,
    asked: BTreeMap<String, usize>,
}

/// The key a request is recorded under.
pub(crate) fn key(request: &Value) -> String {
    canon::sha256_hex(canon::to_string(request).as_bytes())
}

impl HashCassette {
    pub(crate) fn new(source: PathBuf) -> Self {
        HashCassette {
            source,
            own: None,
            answers: None,
            asked: BTreeMap::new(),
        }
    }

    pub(crate) fn source(&self) -> &Path {
        &self.source
    }

    /// Do not answer from the bundle at `path` (the run's own).
    pub(crate) fn skip(&mut self, path: PathBuf) {
        self.own = Some(path);
    }

    fn load(&self) -> BTreeMap<String, Vec<RecordedAnswer>> {
        let mut files: Vec<PathBuf> = if self.source.is_dir() {
            std::fs::read_dir(&self.source)
                .map(|d| {
                    d.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                        .collect()
                })
                .unwrap_or_default()
        } else {
            vec![self.source.clone()]
        };
        files.sort();
        let mut answers: BTreeMap<String, Vec<RecordedAnswer>> = BTreeMap::new();
        for file in files {
            if self.own.as_ref() == Some(&file) {
                continue;
            }
            // Unreadable or foreign files hold no answers.
            // Held (decision 0380): each answered call's request put back
            // whole for its key, one at a time.
            let Ok(mut b) = bundle::read_held(&file) else {
                continue;
            };
            let run = file
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().to_string());
            for seq in 0..b.events.len() as u64 {
                let Some(e) = b.events.get(seq) else { break };
                let Call::ModelComplete { response, .. } = e.typed() else {
                    continue;
                };
                if response.ok.is_none() {
                    continue;
                }
                let answer = RecordedAnswer {
                    run: run.clone(),
                    seq,
                    response: e.response.clone(),
                };
                let Some(request) = b.events.request(seq) else {
                    break;
                };
                answers
                    .entry(key(&request["request"]))
                    .or_default()
                    .push(answer);
            }
        }
        answers
    }

    /// The recorded response for `request`, with where it came from, or
    /// `None` on a miss.
    pub(crate) fn answer(&mut self, request: &Value) -> Option<Value> {
        if self.answers.is_none() {
            self.answers = Some(self.load());
        }
        let k = key(request);
        let found = self.answers.as_ref()?.get(&k)?;
        let n = self.asked.entry(k.clone()).or_insert(0);
        let r = &found[(*n).min(found.len() - 1)];
        *n += 1;
        Some(json!({
            "ok": r.response["ok"],
            "model_call": {
                "provider": "recorded",
                "key": k,
                "source": {"run": r.run, "seq": r.seq},
                "recorded": r.response.get("model_call"),
            },
        }))
    }
}
