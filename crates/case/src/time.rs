//! Virtual time conversions: TOML datetimes to Unix nanoseconds and back to
//! RFC 3339 text (UTC). No real clock is read anywhere in this module.
//!
//! Why this is ground-level (was decision 0050): worlds, cases, the mediator
//! and the store all use it, so it sits below all of them. chrono is used only
//! for parsing; the recorded form is our own text.

use toml::value::Datetime;

/// The longest virtual duration a case or a fault profile may give (a
/// latency in milliseconds, a stale answer's age in seconds): ten years of
/// 366 days. The simulated clock counts nanoseconds in a `u64`, which holds
/// 584 years: a latency of 2^63 ms once wrapped it (or saturated it for the
/// rest of the run), and an age as large wrote a stale answer's time at a
/// year before 0. Decision 0412; checked where a case is read
/// (`case/recorded.rs`).
pub const MAX_DURATION_S: u64 = 10 * 366 * 86_400;
/// [`MAX_DURATION_S`] in milliseconds.
pub const MAX_DURATION_MS: u64 = MAX_DURATION_S * 1_000;

/// The latest clock a case may start at: 9999-12-31T23:59:59.999999999Z
/// less the 584 years the simulated clock's `u64` of nanoseconds can
/// advance (it saturates there), so that no time a run reaches is past
/// the year 9999, the last RFC 3339 can write. A clock later than this
/// once passed, and a tool's `$now` was written `10000-01-01T…`, which no
/// RFC 3339 reader takes. Checked where a case is read
/// (`case/recorded.rs`); a run recorded before replays as it ran.
pub const LAST_CLOCK_NS: i128 = 253_402_300_799_999_999_999 - u64::MAX as i128;

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A full TOML datetime (date, time and offset) as Unix nanoseconds.
pub fn datetime_to_unix_ns(dt: &Datetime) -> Result<i128, String> {
    let (Some(date), Some(time)) = (dt.date, dt.time) else {
        return Err("needs a date and a time, for example 2026-03-01T12:00:00Z".into());
    };
    let offset_min: i64 = match dt.offset {
        Some(toml::value::Offset::Z) => 0,
        Some(toml::value::Offset::Custom { minutes }) => minutes as i64,
        None => return Err("needs a UTC offset (end it with Z or +HH:MM)".into()),
    };
    let days = days_from_civil(date.year as i64, date.month as u32, date.day as u32);
    let secs =
        days * 86_400 + time.hour as i64 * 3600 + time.minute as i64 * 60 + time.second as i64
            - offset_min * 60;
    Ok(secs as i128 * 1_000_000_000 + time.nanosecond as i128)
}

/// RFC 3339 UTC text of Unix nanoseconds, to the second when whole.
/// Written digit by digit for years 0–9999 (a tool's `as_of`, every call:
/// `format!` twice was ~2% of a run's CPU), through `format!` otherwise.
pub fn rfc3339(unix_ns: i128) -> String {
    let secs = unix_ns.div_euclid(1_000_000_000) as i64;
    let nanos = unix_ns.rem_euclid(1_000_000_000) as u32;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    if !(0..=9999).contains(&y) {
        return if nanos == 0 {
            format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
        } else {
            let frac = format!("{nanos:09}");
            format!(
                "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{}Z",
                frac.trim_end_matches('0')
            )
        };
    }
    let mut text = Vec::with_capacity(30);
    let mut put = |n: u64, width: u32, after: u8| {
        for place in (0..width).rev() {
            text.push(b'0' + (n / 10u64.pow(place) % 10) as u8);
        }
        text.push(after);
    };
    put(y as u64, 4, b'-');
    put(m.into(), 2, b'-');
    put(d.into(), 2, b'T');
    put(hh as u64, 2, b':');
    put(mm as u64, 2, b':');
    if nanos == 0 {
        put(ss as u64, 2, b'Z');
    } else {
        put(ss as u64, 2, b'.');
        let mut zeros = 0;
        while nanos.is_multiple_of(10u32.pow(zeros + 1)) {
            zeros += 1;
        }
        put(u64::from(nanos / 10u32.pow(zeros)), 9 - zeros, b'Z');
    }
    String::from_utf8(text).expect("ASCII digits and separators")
}

/// RFC 3339 UTC text of Unix nanoseconds with the seconds' fraction in
/// nine digits always (`2026-03-01T12:05:00.000000000Z`), so that texts of
/// it sort in the order of their times: a tool's `$now` from rules 9.
pub fn rfc3339_nine_digits(unix_ns: i128) -> String {
    let whole = rfc3339(unix_ns.div_euclid(1_000_000_000) * 1_000_000_000);
    let nanos = unix_ns.rem_euclid(1_000_000_000);
    format!("{}.{nanos:09}Z", whole.trim_end_matches('Z'))
}

/// Unix nanoseconds of the `clock` a case file's text sets (its run's
/// virtual time 0), if it sets one. Only `clock` is read: a seed past
/// 2^63 − 1, which a case may give as a bare integer, is no value of a
/// whole TOML table.
pub fn case_clock(case_text: &str) -> Option<i128> {
    #[derive(serde::Deserialize)]
    struct Clock {
        clock: Option<Datetime>,
    }
    let clock = toml::from_str::<Clock>(case_text).ok()?.clock?;
    datetime_to_unix_ns(&clock).ok()
}

/// Unix nanoseconds of RFC 3339 text (as [`rfc3339`] writes it).
pub fn parse_rfc3339(text: &str) -> Option<i128> {
    if let Some(ns) = parse_written(text.as_bytes()) {
        return Some(ns);
    }
    let dt: Datetime = text.parse().ok()?;
    datetime_to_unix_ns(&dt).ok()
}

/// Text in the one form [`rfc3339`] writes (`YYYY-MM-DDTHH:MM:SS`, an
/// optional fraction, `Z`), read digit by digit when its day is at most
/// the 28th and its second not a leap one; `None` sends anything else to
/// TOML's parser. A tool's sort by time reads two such texts per step
/// (TOML's lexer was ~1.5% of a run's CPU).
fn parse_written(b: &[u8]) -> Option<i128> {
    let num = |from: usize, to: usize| -> Option<i64> {
        let digits = b.get(from..to)?;
        (digits.iter()).try_fold(0i64, |n, d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':')) {
        return None;
    }
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hh, mm, ss) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    // Days past the 28th (month lengths, leap years) and leap seconds are
    // TOML's to judge.
    if !((1..=12).contains(&m) && (1..=28).contains(&d) && hh < 24 && mm < 60 && ss < 60) {
        return None;
    }
    let nanos = match b.get(19..)? {
        b"Z" => 0,
        [b'.', frac @ .., b'Z'] if (1..=9).contains(&frac.len()) => {
            num(20, 20 + frac.len())? * 10i64.pow(9 - frac.len() as u32)
        }
        _ => return None,
    };
    let secs = days_from_civil(y, m as u32, d as u32) * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(i128::from(secs) * 1_000_000_000 + i128::from(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text in the form `rfc3339` writes reads as TOML's parser reads it,
    /// and text in any other form (or with a day or second the fast path
    /// leaves to TOML) still does.
    #[test]
    fn written_text_reads_as_toml_reads_it() {
        let by_toml = |t: &str| {
            let dt: Datetime = t.parse().ok()?;
            datetime_to_unix_ns(&dt).ok()
        };
        let mut texts: Vec<String> = [
            "2026-03-01T12:00:00Z",
            "2026-03-01T12:00:00.002Z",
            "2026-03-01T12:00:00.1Z",
            "2026-03-01T12:00:00.123456789Z",
            "0000-01-01T00:00:00Z",
            "9999-12-28T23:59:59.999999999Z",
            "2024-02-29T10:00:00Z",
            "2023-02-29T10:00:00Z",
            "2026-04-31T10:00:00Z",
            "2026-12-31T23:59:60Z",
            "2026-03-01T12:00:00+02:00",
            "2026-03-01t12:00:00z",
            "2026-03-01 12:00:00Z",
            "2026-03-01T12:00:00",
            "2026-03-01T12:00:00.Z",
            "2026-03-01T12:00:00.1234567890Z",
            "2026-13-01T12:00:00Z",
            "2026-00-10T12:00:00Z",
            "2026-03-00T12:00:00Z",
            "2026-03-01T24:00:00Z",
            "2026-03-01T12:60:00Z",
            "2026-3-01T12:00:00Z",
            "+026-03-01T12:00:00Z",
            "2026-03-01T12:00:00ZZ",
            "deploy D-1",
            "",
        ]
        .map(String::from)
        .to_vec();
        let mut ns: i128 = -2_000_000_000_000_000_000;
        while ns < 250_000_000_000_000_000_000 {
            for frac in [0, 1, 2_000_000, 100_000_000, 999_999_999] {
                texts.push(rfc3339(ns + frac));
            }
            ns += 49_999_999_937_000_001;
        }
        for t in &texts {
            assert_eq!(parse_rfc3339(t), by_toml(t), "{t:?}");
        }
        assert!(
            texts
                .iter()
                .filter(|t| parse_written(t.as_bytes()).is_some())
                .count()
                > 1000
        );
    }

    /// The digits written one by one are `format!`'s, across whole
    /// seconds and fractions, and years past 9999 and before 0.
    #[test]
    fn nine_digits_sort_as_their_times() {
        let at = |ns: i128| rfc3339_nine_digits(1_772_366_700_000_000_000 + ns);
        assert_eq!(at(0), "2026-03-01T12:05:00.000000000Z");
        assert_eq!(at(3_240_000_000), "2026-03-01T12:05:03.240000000Z");
        let texts = [
            at(0),
            at(3_000_000_000),
            at(3_238_000_000),
            at(3_240_000_000),
            at(3_240_000_001),
        ];
        assert!(texts.windows(2).all(|w| w[0] < w[1]), "{texts:?}");
        for t in &texts {
            assert_eq!(rfc3339_nine_digits(parse_rfc3339(t).unwrap()), *t);
        }
    }

    #[test]
    fn rfc3339_writes_what_format_wrote() {
        let by_format = |ns: i128| {
            let secs = ns.div_euclid(1_000_000_000) as i64;
            let nanos = ns.rem_euclid(1_000_000_000) as u32;
            let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
            let rem = secs.rem_euclid(86_400);
            let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
            let frac = format!("{nanos:09}");
            let frac = frac.trim_end_matches('0');
            let dot = if frac.is_empty() { "" } else { "." };
            format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}{dot}{frac}Z")
        };
        // Year -248 to 11,476, ~31 years and some seconds apart: 375
        // instants, 320 of them in years 0-9999.
        let (mut ns, mut written): (i128, u32) = (-70_000_000_000_000_000_000, 0);
        while ns < 300_000_000_000_000_000_000 {
            for frac in [0, 1, 4_000_000, 500_000_000, 123_456_789, 999_999_999, 10] {
                assert_eq!(rfc3339(ns + frac), by_format(ns + frac), "{}", ns + frac);
            }
            written +=
                u32::from((-62_000_000_000_000_000_000..253_000_000_000_000_000_000).contains(&ns));
            ns += 987_654_321_987_654_321;
        }
        assert!(written > 300, "{written} instants in years 0-9999");
        assert_eq!(rfc3339(4_000_000), "1970-01-01T00:00:00.004Z");
    }

    #[test]
    fn datetimes_round_trip() {
        let dt: Datetime = "2026-03-01T12:00:00Z".parse().unwrap();
        let ns = datetime_to_unix_ns(&dt).unwrap();
        assert_eq!(ns, 1_772_366_400 * 1_000_000_000);
        assert_eq!(rfc3339(ns), "2026-03-01T12:00:00Z");
        assert_eq!(rfc3339(ns + 1_500_000_000), "2026-03-01T12:00:01.5Z");
        let shifted: Datetime = "2026-03-01T14:00:00+02:00".parse().unwrap();
        assert_eq!(datetime_to_unix_ns(&shifted).unwrap(), ns);
    }

    #[test]
    fn local_datetimes_are_refused() {
        let dt: Datetime = "2026-03-01T12:00:00".parse().unwrap();
        assert!(datetime_to_unix_ns(&dt).unwrap_err().contains("UTC offset"));
    }
}
