//! `history`'s timeline: a run's bundle read as far as the page asked for
//! needs (decision 0346), its model requests held compact (decision
//! 0380), then the page of its events (`--only`, `--skip`, `-n`) with
//! where it stands in the run, each event as its row reads it
//! (`Held::shown`).

use anyhow::Result;
use std::path::Path;
use worldline_case::error::InputError;
use worldline_log::log::{Event, HeldBundle};

/// Which events of a run to show.
pub struct Query {
    /// Only events whose call contains this text.
    pub only: Option<String>,
    /// Leave out the first this many (after `only`).
    pub skip: usize,
    /// Show at most this many (after `only` and `skip`).
    pub max_count: Option<usize>,
    /// The run's streams are wanted, not its events.
    pub streams: bool,
    /// Read every event whatever the page: a redacted view hides what its
    /// paths hide wherever the run quotes it again (a stream, the footer),
    /// which it learns from the events (`history --stderr` showed a value
    /// a `request.args` path hides, which `export --redacted` hid).
    pub whole: bool,
}

/// A run's bundle, as much of it as a query needs, and its length.
pub struct Read {
    pub bundle: HeldBundle,
    /// The run's length: its footer's count when only a prefix was read.
    pub total: usize,
}

/// Read the run at `path` for `q`: a page of the whole timeline reads the
/// events up to its end and the footer, not the rest; the streams need
/// no event.
pub fn read(path: &Path, q: &Query) -> Result<Read> {
    let upto = match (&q.only, q.max_count) {
        _ if q.whole => None,
        _ if q.streams => Some(0),
        (None, Some(n)) => Some(q.skip.saturating_add(n) as u64),
        _ => None,
    };
    let bundle = match upto {
        Some(upto) => worldline_log::log::prefix::read_held(path, upto),
        None => worldline_log::log::bundle::read_held(path),
    }
    .map_err(InputError::from)?;
    let total = bundle
        .footer
        .as_ref()
        .map_or(0, |f| f.events as usize)
        .max(bundle.events.len());
    Ok(Read { bundle, total })
}

/// The events of a page and where it stands among those matched.
pub struct Page {
    /// Each as its row reads it: a compact model call's fields whole but
    /// its messages (those it appended).
    pub events: Vec<Event>,
    /// Events `only` matched in the whole run.
    pub matched: usize,
    /// Matched events after the page.
    pub after: usize,
}

/// The page `q` asks for of `r`'s events, each as its row reads it.
pub fn page(r: &mut Read, q: &Query) -> Page {
    let held = &mut r.bundle.events;
    let seqs: Vec<u64> = held
        .as_held()
        .iter()
        .filter(|e| q.only.as_ref().is_none_or(|o| e.call.contains(o.as_str())))
        .map(|e| e.seq)
        .collect();
    let matched = if q.only.is_none() {
        r.total
    } else {
        seqs.len()
    };
    let events: Vec<Event> = seqs
        .into_iter()
        .skip(q.skip)
        .take(q.max_count.unwrap_or(usize::MAX))
        .filter_map(|seq| held.shown(seq).map(std::borrow::Cow::into_owned))
        .collect();
    let after = matched.saturating_sub(q.skip + events.len());
    Page {
        events,
        matched,
        after,
    }
}
