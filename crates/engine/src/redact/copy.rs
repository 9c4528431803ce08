//! A redacted copy of a run (`export --redacted`): every event, the footer
//! and the output pass through the redactor; the events are chained anew,
//! so the copy verifies by itself; its header says it is a copy, of which
//! run (id and chain hash), under which policy.

use super::Redactor;
use crate::log::Recorder;
use crate::log::bundle::{self, Bundle, Redacted};

/// The redacted copy of the bundle of run `run_id`.
pub fn of(run_id: &str, b: &Bundle, r: &mut Redactor) -> Bundle {
    let mut recorder = Recorder::in_memory();
    for e in &b.events {
        let mut e = e.clone();
        r.event(&mut e);
        recorder
            .append(e)
            .expect("an in-memory recorder does not fail");
    }
    let (_, events, head) = recorder.finish();
    let footer = b.footer.as_ref().map(|f| {
        let mut f = f.clone();
        r.footer(&mut f);
        f.chain_hash = head.clone();
        f.hash = bundle::footer_hash(&f);
        f
    });
    let mut header = b.header.clone();
    r.header(&mut header);
    header.redacted = Some(Redacted {
        hidden: r.hidden() as u64,
        original_run: run_id.to_string(),
        original_chain_hash: b.footer.as_ref().map_or_else(
            || b.events.last().map_or_else(String::new, |e| e.hash.clone()),
            |f| f.chain_hash.clone(),
        ),
        policy_sha256: r.policy_hash().to_string(),
    });
    Bundle {
        header,
        events,
        footer,
    }
}
