//! A shrunk schedule in words: "fails when list_deploys (call 1) is stale
//! by more than 9 min (fails at 9 min 1 s, passes at 9 min); no other
//! fault needed".

use super::shrink::Shrunk;
use worldline_case::case::fuzz::PlannedFault;
use worldline_case::case::inject::Action;

/// `541` → `9 min 1 s`; `3600` → `1 h`.
pub fn seconds(s: u64) -> String {
    let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
    let parts: Vec<String> = [(h, "h"), (m, "min"), (sec, "s")]
        .iter()
        .filter(|(v, _)| *v > 0)
        .map(|(v, u)| format!("{v} {u}"))
        .collect();
    if parts.is_empty() {
        "0 s".into()
    } else {
        parts.join(" ")
    }
}

/// One fault in words; `passes_at` is the largest magnitude that passed.
pub fn fault(f: &PlannedFault, passes_at: Option<u64>) -> String {
    let call = format!("{} (call {})", f.tool, f.nth);
    // A magnitude, with the threshold the search found when it found one.
    let threshold = |fails: u64, unit: fn(u64) -> String| match passes_at {
        Some(pass) => format!(
            "more than {} (fails at {}, passes at {})",
            unit(pass),
            unit(fails),
            unit(pass)
        ),
        None => unit(fails),
    };
    let ms = |v: u64| format!("{v} ms");
    let user_turn = f.tool == worldline_case::case::fuzz::USER_TURN;
    let what = match &f.action {
        Action::Empty if user_turn => "goes silent (the user ends the conversation)".into(),
        Action::Respond(v) if user_turn => format!("is answered {v} instead"),
        Action::Stale(st) => format!("is stale by {}", threshold(st.age_s, seconds)),
        Action::Deny => "is denied".into(),
        Action::Error(kind) => format!("fails with {kind}"),
        Action::Empty => "returns an empty result".into(),
        Action::Partial(p) => format!(
            "writes only {} and fails with {}",
            p.fields.join(", "),
            p.error
                .unwrap_or(worldline_case::error_kind::ErrorKind::Failed)
        ),
        Action::Respond(_) => "gets a fixed answer".into(),
        Action::Injection(i) => match &i.vector {
            Some(v) => format!("carries an injected text at `{v}`: {:?}", i.text),
            None => format!("carries an injected text: {:?}", i.text),
        },
        Action::Delay => {
            return format!(
                "{call} is late by {}",
                threshold(f.latency_ms.unwrap_or(0), ms)
            );
        }
    };
    match f.latency_ms {
        Some(v) => format!("{call} {what}, {} late", ms(v)),
        None => format!("{call} {what}"),
    }
}

/// The whole shrunk schedule in one sentence.
pub fn schedule(s: &Shrunk) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(skew) = s.schedule.clock_skew_s {
        let dir = if skew < 0 { "behind" } else { "ahead" };
        let mut text = format!(
            "the agent's clock is {} {dir}",
            seconds(skew.unsigned_abs())
        );
        if let Some(p) = s.skew_passes_at {
            text.push_str(&format!(" (passes at {})", seconds(p.unsigned_abs())));
        }
        parts.push(text);
    }
    for (i, f) in s.schedule.faults.iter().enumerate() {
        parts.push(fault(f, s.passes_at.get(i).copied().flatten()));
    }
    match parts.len() {
        0 => "fails with no injected fault at all: the cause is the agent, its model's choices or the case, not the faults".into(),
        1 => format!("fails when {}; no other fault needed", parts[0]),
        _ if s.complete => format!(
            "fails this way only when all of these happen: {}; without any one of them it does not fail this way (it may fail another way: see the other groups)",
            parts.join("; ")
        ),
        _ => format!(
            "fails when all of these happen: {}; the shrink budget ran out before each was tried without the others, so some may not be needed (raise --shrink-budget)",
            parts.join("; ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::case::fuzz::Schedule;
    use worldline_case::case::inject::Stale;

    #[test]
    fn the_sentence_names_the_fault_and_its_threshold() {
        let s = Shrunk {
            schedule: Schedule {
                clock_skew_s: None,
                faults: vec![PlannedFault {
                    action: Action::Stale(Stale {
                        age_s: 541,
                        field: Some("at".into()),
                    }),
                    latency_ms: None,
                    nth: 1,
                    tool: "list_deploys".into(),
                }],
            },
            passes_at: vec![Some(540)],
            skew_passes_at: None,
            tries: 12,
            complete: true,
        };
        assert_eq!(
            schedule(&s),
            "fails when list_deploys (call 1) is stale by more than 9 min (fails at 9 min 1 s, passes at 9 min); no other fault needed"
        );
        let late = PlannedFault {
            action: Action::Delay,
            latency_ms: Some(1000),
            nth: 2,
            tool: "get_alert".into(),
        };
        assert_eq!(
            fault(&late, Some(999)),
            "get_alert (call 2) is late by more than 999 ms (fails at 1000 ms, passes at 999 ms)"
        );
        let denied = PlannedFault {
            action: Action::Deny,
            latency_ms: Some(5),
            ..late.clone()
        };
        assert_eq!(
            fault(&denied, None),
            "get_alert (call 2) is denied, 5 ms late"
        );
        // Two faults: each needed only when the search tried each without
        // the other (it said so when the budget ran out first).
        let two = Shrunk {
            schedule: Schedule {
                clock_skew_s: None,
                faults: vec![denied.clone(), late],
            },
            passes_at: vec![None, None],
            skew_passes_at: None,
            tries: 3,
            complete: true,
        };
        assert!(schedule(&two).contains("without any one of them it does not fail this way"));
        let spent = Shrunk {
            complete: false,
            ..two
        };
        let said = schedule(&spent);
        assert!(!said.contains("without any one of them"), "{said}");
        assert!(
            said.contains("some may not be needed (raise --shrink-budget)"),
            "{said}"
        );
        assert_eq!(seconds(3600), "1 h");
        assert_eq!(seconds(0), "0 s");
    }
}
