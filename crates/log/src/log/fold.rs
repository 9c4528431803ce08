//! Clock reads folded: consecutive reads of the same clock
//! (`wasi:clocks/monotonic-clock.now` or `wall-clock.now`) with no other
//! call between them are written as one line, `{"fold": {...}}`, carrying
//! the first read's seq, fuel and virtual time, the count, each later
//! read's fuel as a step from the one before, the tick between reads and
//! (for the wall clock) its offset from virtual time: the rule every read's
//! answer follows. Reading puts each read back as a whole event before the
//! chain is checked, so event numbers, hashes and every reader still count
//! one event per read. Only the bundle's text is folded.

use super::event::{Effect, Event};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The most reads one line folds (a line stays small however long the
/// agent spins on its clock, and a reader never allocates more for one).
pub(super) const MAX_FOLD: usize = 4096;

const MONO: &str = "wasi:clocks/monotonic-clock.now";
const WALL: &str = "wasi:clocks/wall-clock.now";
const NS: i128 = 1_000_000_000;

/// A folded run of clock reads, as its line holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fold {
    call: String,
    count: u64,
    /// The first read's fuel, then each later read's fuel minus the one
    /// before it.
    fuel: Vec<u64>,
    /// The last read's chained hash.
    hash: String,
    seq: u64,
    /// Virtual time between one read and the next.
    tick_ns: u64,
    /// The first read's virtual time.
    vtime_ns: u64,
    /// The wall clock's reading minus virtual time (wall-clock reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wall_offset_ns: Option<i64>,
}

/// What the clock answers at virtual time `vtime`: the monotonic clock
/// its nanoseconds, the wall clock its datetime at `offset` from it.
fn response(call: &str, vtime: u64, offset: Option<i64>) -> Option<Value> {
    match (call, offset) {
        (MONO, None) => Some(json!(vtime)),
        (WALL, Some(offset)) => {
            let ns = vtime as i128 + offset as i128;
            Some(
                json!({"seconds": ns.div_euclid(NS) as u64, "nanoseconds": ns.rem_euclid(NS) as u32}),
            )
        }
        _ => None,
    }
}

/// The event a fold's rule gives for one read (its hash not yet set).
fn read_event(call: &str, seq: u64, fuel: u64, vtime: u64, offset: Option<i64>) -> Option<Event> {
    Some(Event {
        call: call.to_string(),
        effect: Effect::Read,
        fuel,
        hash: String::new(),
        injected: None,
        request: json!({}),
        response: response(call, vtime, offset)?,
        seq,
        vtime_ns: vtime,
        writes: Vec::new(),
    })
}

/// Whether `event` is a plain clock read, and its wall offset if it reads
/// the wall clock: the rule must give back exactly this event.
fn clock_read(event: &Event) -> Option<Option<i64>> {
    let offset = match event.call.as_str() {
        MONO => None,
        WALL => {
            let s = event.response.get("seconds")?.as_u64()? as i128;
            let n = event.response.get("nanoseconds")?.as_u64()? as i128;
            Some(i64::try_from(s * NS + n - event.vtime_ns as i128).ok()?)
        }
        _ => return None,
    };
    let mut bare = read_event(&event.call, event.seq, event.fuel, event.vtime_ns, offset)?;
    bare.hash.clone_from(&event.hash);
    (bare == *event).then_some(offset)
}

/// The writer's pending run of clock reads.
#[derive(Debug, Default)]
pub(super) struct Folds {
    pending: Vec<Event>,
    offset: Option<i64>,
}

impl Folds {
    /// Offer the next recorded event (hash set). Returns the text to write
    /// now (lines ending in `\n`, possibly none): a pending run this event
    /// ends, then the event's own `line` unless the event is held back
    /// to be folded with the reads after it.
    pub(super) fn offer(&mut self, event: &Event, line: impl FnOnce() -> String) -> String {
        let read = clock_read(event);
        if let Some(offset) = read
            && self.extends(event, offset)
        {
            self.pending.push(event.clone());
            return String::new();
        }
        let mut text = self.flush();
        match read {
            Some(offset) => {
                self.offset = offset;
                self.pending.push(event.clone());
            }
            None => {
                text.push_str(&line());
                text.push('\n');
            }
        }
        text
    }

    /// How many reads are held back, not yet written.
    pub(super) fn held(&self) -> usize {
        self.pending.len()
    }

    /// Whether `event` continues the pending run by its rule.
    fn extends(&self, event: &Event, offset: Option<i64>) -> bool {
        let (Some(first), Some(last)) = (self.pending.first(), self.pending.last()) else {
            return false;
        };
        let tick = match self.pending.get(1) {
            Some(second) => second.vtime_ns - first.vtime_ns,
            None => event.vtime_ns.wrapping_sub(last.vtime_ns),
        };
        self.pending.len() < MAX_FOLD
            && event.call == first.call
            && offset == self.offset
            && event.seq == last.seq + 1
            && event.fuel >= last.fuel
            && event.vtime_ns >= last.vtime_ns
            && event.vtime_ns - last.vtime_ns == tick
    }

    /// The pending run's text (a whole event line for a single read, a
    /// fold line for more), and nothing pending after.
    pub(super) fn flush(&mut self) -> String {
        let pending = std::mem::take(&mut self.pending);
        let mut text = match pending.as_slice() {
            [] => return String::new(),
            [one] => serde_json::to_string(one).expect("events serialize"),
            [first, second, ..] => {
                let last = pending.last().expect("two or more");
                let mut fuel = vec![first.fuel];
                fuel.extend(pending.windows(2).map(|w| w[1].fuel - w[0].fuel));
                let fold = Fold {
                    call: first.call.clone(),
                    count: pending.len() as u64,
                    fuel,
                    hash: last.hash.clone(),
                    seq: first.seq,
                    tick_ns: second.vtime_ns - first.vtime_ns,
                    vtime_ns: first.vtime_ns,
                    wall_offset_ns: self.offset,
                };
                worldline_case::canon::to_string(&json!({ "fold": fold }))
            }
        };
        text.push('\n');
        text
    }
}

/// A folded run read back: its events (hashes not set: the reader chains
/// them) and the last one's recorded hash.
pub(super) struct Unfolded {
    pub events: Vec<Event>,
    pub hash: String,
}

/// The events of a fold line `value`, or `None` when it is not one. An
/// error says what is wrong with it.
pub(super) fn unfold(value: &Value) -> Option<Result<Unfolded, String>> {
    let fold = value.get(FOLD_KEY)?;
    Some(unfold_one(fold))
}

const FOLD_KEY: &str = "fold";

fn unfold_one(fold: &Value) -> Result<Unfolded, String> {
    let fold: Fold = serde_json::from_value(fold.clone()).map_err(|e| e.to_string())?;
    let count = fold.count as usize;
    if !(2..=MAX_FOLD).contains(&count) {
        return Err(format!(
            "`count` is {}; a fold holds 2 to {MAX_FOLD} reads",
            fold.count
        ));
    }
    if fold.fuel.len() != count {
        return Err(format!(
            "`fuel` has {} values for {count} reads",
            fold.fuel.len()
        ));
    }
    let mut events = Vec::with_capacity(count);
    let mut fuel = 0u64;
    for (i, step) in fold.fuel.iter().enumerate() {
        fuel = fuel.checked_add(*step).ok_or("`fuel` overflows")?;
        let vtime = (i as u64)
            .checked_mul(fold.tick_ns)
            .and_then(|t| t.checked_add(fold.vtime_ns))
            .ok_or("`vtime_ns` overflows")?;
        let event = read_event(
            &fold.call,
            fold.seq + i as u64,
            fuel,
            vtime,
            fold.wall_offset_ns,
        )
        .ok_or_else(|| {
            format!(
                "`{}` is not a clock read a fold holds (or its wall offset is missing)",
                fold.call
            )
        })?;
        events.push(event);
    }
    Ok(Unfolded {
        events,
        hash: fold.hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(call: &str, seq: u64, fuel: u64, vtime: u64) -> Event {
        let offset = (call == WALL).then_some(1_700_000_000_000_000_000);
        let mut e = read_event(call, seq, fuel, vtime, offset).unwrap();
        e.hash = format!("{seq:064}");
        e
    }

    fn other(seq: u64) -> Event {
        Event {
            call: "wasi:random/random.get-random-u64".into(),
            response: json!(7),
            ..read(MONO, seq, 0, 0)
        }
    }

    fn line(e: &Event) -> impl FnOnce() -> String + '_ {
        || serde_json::to_string(e).unwrap()
    }

    #[test]
    fn consecutive_reads_fold_into_one_line_and_read_back_whole() {
        let events = [
            read(MONO, 0, 100, 1000),
            read(MONO, 1, 130, 2000),
            read(MONO, 2, 175, 3000),
            other(3),
            read(WALL, 4, 200, 5000),
            read(WALL, 5, 210, 6000),
            read(MONO, 6, 220, 7000),
        ];
        let mut folds = Folds::default();
        let mut text = String::new();
        for e in &events {
            text.push_str(&folds.offer(e, line(e)));
        }
        text.push_str(&folds.flush());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].contains("\"fuel\":[100,30,45]"), "{}", lines[0]);
        let mut back = Vec::new();
        for l in &lines {
            let v: Value = serde_json::from_str(l).unwrap();
            match unfold(&v) {
                Some(run) => {
                    let run = run.unwrap();
                    let n = run.events.len();
                    for (i, mut e) in run.events.into_iter().enumerate() {
                        e.hash = if i + 1 == n {
                            run.hash.clone()
                        } else {
                            format!("{:064}", e.seq)
                        };
                        back.push(e);
                    }
                }
                None => back.push(serde_json::from_value(v).unwrap()),
            }
        }
        assert_eq!(back, events);
    }

    #[test]
    fn a_read_off_the_rule_starts_a_new_run() {
        let a = read(MONO, 0, 1, 1000);
        let b = read(MONO, 1, 2, 2000);
        let c = read(MONO, 2, 3, 3500); // a longer step: not the rule
        let mut folds = Folds::default();
        let mut text = String::new();
        for e in [&a, &b, &c] {
            text.push_str(&folds.offer(e, line(e)));
        }
        text.push_str(&folds.flush());
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    #[test]
    fn bad_folds_are_errors_not_allocations() {
        let too_many = json!({"fold": {"call": MONO, "count": 1u64 << 40, "fuel": [], "hash": "", "seq": 0, "tick_ns": 1, "vtime_ns": 0}});
        let err = unfold(&too_many).unwrap().err().unwrap();
        assert!(err.contains("2 to 4096"), "{err}");
        let short = json!({"fold": {"call": MONO, "count": 3, "fuel": [1, 2], "hash": "", "seq": 0, "tick_ns": 1, "vtime_ns": 0}});
        assert!(
            unfold(&short)
                .unwrap()
                .err()
                .unwrap()
                .contains("`fuel` has 2")
        );
        let wall = json!({"fold": {"call": WALL, "count": 2, "fuel": [1, 2], "hash": "", "seq": 0, "tick_ns": 1, "vtime_ns": 0}});
        assert!(unfold(&wall).unwrap().is_err());
    }
}
