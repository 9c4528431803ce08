//! A redacted copy of a run (`export --redacted`): every event, the footer
//! and the output pass through the redactor; the events are chained anew,
//! so the copy verifies by itself; its header says it is a copy, of which
//! run (id and chain hash), under which policy.

use super::Redactor;
use crate::log::bundle::{self, Bundle, Footer, Header, Redacted};
use crate::log::{Event, Recorder};

/// The redacted copy of the bundle of run `run_id`.
pub fn of(run_id: &str, b: &Bundle, r: &mut Redactor) -> Bundle {
    of_parts(run_id, &b.header, &b.events, b.footer.as_ref(), r)
}

/// The redacted copy of run `run_id` from its header, events and footer
/// (a run just finished, not read back).
pub fn of_parts(
    run_id: &str,
    header: &Header,
    events: &[Event],
    footer: Option<&Footer>,
    r: &mut Redactor,
) -> Bundle {
    let original_chain_hash = footer.map_or_else(
        || events.last().map_or_else(String::new, |e| e.hash.clone()),
        |f| f.chain_hash.clone(),
    );
    let mut recorder = Recorder::in_memory();
    for e in events {
        let mut e = e.clone();
        r.event(&mut e);
        recorder
            .append(e)
            .expect("an in-memory recorder does not fail");
    }
    let (_, events, head) = recorder
        .finish()
        .expect("an in-memory recorder does not fail");
    let footer = footer.map(|f| {
        let mut f = f.clone();
        r.footer(&mut f);
        f.chain_hash = head.clone();
        f.hash = bundle::footer_hash(&f);
        f
    });
    let mut header = header.clone();
    r.header(&mut header);
    header.redacted = Some(Redacted {
        hidden: r.hidden() as u64,
        original_run: run_id.to_string(),
        original_chain_hash,
        policy_sha256: r.policy_hash().to_string(),
    });
    // A call in flight is named by its request's hash, which a copy
    // without the request has no use for.
    Bundle {
        header,
        events: events.whole().into_owned(),
        footer,
        in_flight: None,
        chain: crate::log::Chain::Lines,
    }
}
