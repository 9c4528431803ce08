//! What a case a run recorded is spared when it is read again (replay,
//! `verify`, `fork`, `resume`): the rules that refuse what no run can meet
//! (decision 0412) came after runs were recorded, and a run recorded before
//! them replays as it ran. [`Reading`] (`crate::new_rules`) marks the
//! thread reading such a case; the checks of those rules ask
//! [`new_rules_apply`].

pub(crate) use crate::new_rules::{Reading, apply as new_rules_apply};
use crate::time::{LAST_CLOCK_NS, MAX_DURATION_MS, MAX_DURATION_S};

/// `ms`, a duration in milliseconds written as `what`, checked to be at
/// most [`MAX_DURATION_MS`] (when [`new_rules_apply`]).
pub(crate) fn check_ms(what: &str, ms: u64) -> Result<(), String> {
    if ms <= MAX_DURATION_MS || !new_rules_apply() {
        return Ok(());
    }
    Err(format!(
        "{what} = {ms} is longer than ten years ({MAX_DURATION_MS} ms), the longest virtual duration a case may give; give at most {MAX_DURATION_MS}"
    ))
}

/// A case's clock, `clock_ns` Unix nanoseconds, checked to be at most
/// [`LAST_CLOCK_NS`] (when [`new_rules_apply`]).
pub(crate) fn check_clock(clock_ns: i128) -> Result<(), String> {
    if clock_ns <= LAST_CLOCK_NS || !new_rules_apply() {
        return Ok(());
    }
    Err(format!(
        "is after {}: a run's virtual time may move on 584 years from its clock and must stay within the year 9999, the last RFC 3339 can write; give an earlier clock",
        crate::time::rfc3339(LAST_CLOCK_NS)
    ))
}

/// `s`, a duration in seconds written as `what`, checked to be at most
/// [`MAX_DURATION_S`] (when [`new_rules_apply`]).
pub(crate) fn check_s(what: &str, s: u64) -> Result<(), String> {
    if s <= MAX_DURATION_S || !new_rules_apply() {
        return Ok(());
    }
    Err(format!(
        "{what} = {s} is longer than ten years ({MAX_DURATION_S} s), the longest virtual duration a case may give; give at most {MAX_DURATION_S}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last clock is allowed, a nanosecond later is refused naming
    /// it, and a recorded case is spared.
    #[test]
    fn a_clock_is_at_most_the_last_one_a_run_cannot_pass_9999_from() {
        assert_eq!(
            crate::time::rfc3339(LAST_CLOCK_NS),
            "9415-06-13T00:25:26.290448384Z"
        );
        assert_eq!(
            crate::time::rfc3339(LAST_CLOCK_NS + u64::MAX as i128),
            "9999-12-31T23:59:59.999999999Z"
        );
        assert_eq!(check_clock(LAST_CLOCK_NS), Ok(()));
        let e = check_clock(LAST_CLOCK_NS + 1).unwrap_err();
        assert!(
            e.starts_with("is after 9415-06-13T00:25:26.290448384Z: "),
            "{e}"
        );
        let _recorded = Reading::start();
        assert_eq!(check_clock(LAST_CLOCK_NS + 1), Ok(()));
    }

    /// Ten years is the longest duration, in either unit; one more is
    /// refused, naming what was written.
    #[test]
    fn durations_are_at_most_ten_years() {
        assert_eq!(MAX_DURATION_MS, 316_224_000_000);
        assert_eq!(check_ms("latency_ms", MAX_DURATION_MS), Ok(()));
        assert_eq!(check_s("age_s", MAX_DURATION_S), Ok(()));
        let e = check_ms("latency_ms", MAX_DURATION_MS + 1).unwrap_err();
        assert!(
            e.starts_with("latency_ms = 316224000001 is longer than ten years"),
            "{e}"
        );
        let e = check_s("stale.age_s", u64::MAX).unwrap_err();
        assert!(
            e.starts_with("stale.age_s = 18446744073709551615 is longer"),
            "{e}"
        );
        assert!(e.ends_with("give at most 316224000"), "{e}");
    }

    /// A recorded case is spared the bound, and only while it is read.
    #[test]
    fn a_recorded_case_is_spared_while_it_is_read() {
        {
            let _reading = Reading::start();
            assert_eq!(check_ms("latency_ms", u64::MAX), Ok(()));
            assert!(!new_rules_apply());
        }
        assert!(new_rules_apply());
        assert!(check_ms("latency_ms", u64::MAX).is_err());
    }
}
