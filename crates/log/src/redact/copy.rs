//! A redacted copy of a run (`export --redacted`): every event, the footer
//! and the output pass through the redactor; the events are chained anew,
//! so the copy verifies by itself; its header says it is a copy, of which
//! run (id and chain hash, and its case's clock), under which policy.

use super::Redactor;
use crate::log::bundle::{self, Footer, Header, HeldBundle, Redacted};
use crate::log::{Chain, Event, Extends, Recorder};

/// The redacted copy of the bundle of run `run_id`, read held (decision
/// 0380), the copy held compact too. `clock`: the run's case clock (RFC
/// 3339), when its case sets one.
///
/// A compact model call is redacted as held (what it appended and the
/// fields it changed, as [`Redactor::held`] shows it) and recorded as
/// extending the same call the same way
/// ([`Recorder::append_extending`]): the same line and hash as its whole
/// request redacted and recorded anew, since what it keeps of its base
/// was redacted there alike. Putting back each call's whole conversation
/// to redact and record it made the copy of a long run quadratic in its
/// length. Each event is put back whole under a policy that hides a chat
/// request or its messages whole (as [`Redactor::held`] does), and for a
/// bundle whose chain hashed whole requests ([`Chain::Whole`], written
/// before decision 0345), whose compact lines the copy does not take as
/// its own.
pub fn of(run_id: &str, b: &mut HeldBundle, clock: Option<String>, r: &mut Redactor) -> HeldBundle {
    let original_chain_hash = chain_of(b.footer.as_ref(), b.events.as_held());
    r.whole(&b.header, &mut b.events, b.footer.as_ref());
    let original = (original_chain_hash, clock);
    if b.chain == Chain::Lines && r.compact() {
        let held = &b.events;
        let events = (held.as_held().iter().enumerate())
            .map(|(seq, e)| (e.clone(), held.extending(seq as u64).cloned()));
        return copy(run_id, &b.header, events, original, b.footer.as_ref(), r);
    }
    let held = &mut b.events;
    let events = (0..held.len() as u64)
        .map(|seq| (held.event(seq).expect("a held event").into_owned(), None));
    copy(run_id, &b.header, events, original, b.footer.as_ref(), r)
}

/// The redacted copy of run `run_id` from its header, events and footer
/// (a run just finished, not read back); `clock` as [`of`] takes it.
pub fn of_parts(
    run_id: &str,
    header: &Header,
    events: &[Event],
    footer: Option<&Footer>,
    clock: Option<String>,
    r: &mut Redactor,
) -> HeldBundle {
    let original_chain_hash = chain_of(footer, events);
    r.learn_only(|r| {
        r.header(&mut header.clone());
        r.learn(events);
        if let Some(f) = footer {
            r.footer(&mut f.clone());
        }
    });
    copy(
        run_id,
        header,
        events.iter().map(|e| (e.clone(), None)),
        (original_chain_hash, clock),
        footer,
        r,
    )
}

/// The chain hash of the run a copy is made of: its footer's, or its last
/// event's when it has none.
fn chain_of(footer: Option<&Footer>, events: &[Event]) -> String {
    footer.map_or_else(
        || events.last().map_or_else(String::new, |e| e.hash.clone()),
        |f| f.chain_hash.clone(),
    )
}

/// The copy of `events` (in order), each redacted and recorded anew: whole,
/// or a compact model call with how it extends its base, as held;
/// `original`: the run's chain hash and case clock.
fn copy(
    run_id: &str,
    header: &Header,
    events: impl Iterator<Item = (Event, Option<Extends>)>,
    (original_chain_hash, clock): (String, Option<String>),
    footer: Option<&Footer>,
    r: &mut Redactor,
) -> HeldBundle {
    let mut recorder = Recorder::in_memory();
    for (mut e, x) in events {
        match x {
            Some(x) => {
                r.event_extending(&mut e, x.keep());
                recorder.append_extending(e, x, true)
            }
            None => {
                r.event(&mut e);
                recorder.append(e)
            }
        }
        .expect("an in-memory recorder does not fail");
    }
    let (_, events, head) = recorder
        .finish()
        .expect("an in-memory recorder does not fail");
    let footer = footer.map(|f| {
        let mut f = f.clone();
        r.footer(&mut f);
        f.chain_hash = head.clone();
        f
    });
    let mut header = header.clone();
    r.header(&mut header);
    header.redacted = Some(Redacted {
        hidden: r.hidden() as u64,
        original_run: run_id.to_string(),
        original_chain_hash,
        policy_sha256: r.policy_hash().to_string(),
        clock,
    });
    // The copy's footer is hashed over the copy's header and chain.
    let footer = footer.map(|mut f| {
        bundle::seal(&mut f, &header);
        f
    });
    // A call in flight is named by its request's hash, which a copy
    // without the request has no use for.
    HeldBundle {
        header,
        events,
        footer,
        in_flight: None,
        chain: Chain::Lines,
    }
}
