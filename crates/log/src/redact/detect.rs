//! Detectors of personal data and secrets in text: e-mail addresses, phone
//! numbers, payment cards (an issuer's prefix and the Luhn checksum), IBANs (ISO 13616 mod-97 check),
//! API-key-like tokens, and custom regular expressions. Each finds spans;
//! the redactor replaces them with placeholders.

use regex::Regex;
use std::sync::LazyLock;

/// One kind of thing to find.
#[derive(Clone)]
pub(crate) struct Detector {
    /// The placeholder's label (`email`, `phone`, `card`, `iban`,
    /// `api_key`, or a custom name).
    pub kind: String,
    re: Regex,
    check: fn(&str) -> bool,
}

/// The built-in detectors' names, in the order they run.
pub(crate) const BUILT_IN: [&str; 5] = ["api_key", "email", "iban", "card", "phone"];

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b").expect("regex")
});
static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\+\d[\d ().-]{6,18}\d|\(\d{3}\) ?\d{3}[-. ]\d{4}\b|\b\d{3}[-.]\d{3}[-.]\d{4}\b")
        .expect("regex")
});
static CARD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:\d[ -]?){12,18}\d\b").expect("regex"));
static IBAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b").expect("regex")
});
static API_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:sk|pk|rk)-(?:proj-|live-|test-)?[A-Za-z0-9_-]{16,}",
        r"|\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        r"|\bgh[pousr]_[A-Za-z0-9]{30,}",
        r"|\bxox[abpr]-[A-Za-z0-9-]{10,}",
        r"|\bAKIA[0-9A-Z]{16}\b",
        r"|\bAIza[0-9A-Za-z_-]{35}",
        r"|\b[A-Za-z0-9_-]{32,}",
    ))
    .expect("regex")
});

fn digits(s: &str) -> Vec<u32> {
    s.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// The Luhn checksum of a card number holds.
pub(crate) fn luhn(number: &str) -> bool {
    let d = digits(number);
    if !(13..=19).contains(&d.len()) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| {
            if i % 2 == 1 {
                let y = x * 2;
                if y > 9 { y - 9 } else { y }
            } else {
                x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// The ISO 13616 check of an IBAN holds (letters as 10..35, the first
/// four characters moved to the end, the number mod 97 is 1).
pub(crate) fn iban_ok(text: &str) -> bool {
    let s: String = text.chars().filter(|c| *c != ' ').collect();
    if !(15..=34).contains(&s.len()) {
        return false;
    }
    let (head, tail) = s.split_at(4);
    let mut rem: u32 = 0;
    for c in tail.chars().chain(head.chars()) {
        let v = match c {
            '0'..='9' => c as u32 - '0' as u32,
            'A'..='Z' => c as u32 - 'A' as u32 + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

/// A payment card: its number starts as a card network issues them and
/// its Luhn checksum holds. The prefix keeps other long digit runs that
/// happen to pass the checksum (one in ten does), such as a run id's
/// date and time (`20261128132556-…`), from being taken for cards.
fn card_ok(s: &str) -> bool {
    let d = digits(s);
    let prefix = |n: usize| d.iter().take(n).fold(0, |acc, x| acc * 10 + x);
    // Visa 4; Mastercard 50-55 (with Maestro 56-59) and 2221-2720; Amex
    // 34 and 37; Diners 300-305, 36, 38 and 39; JCB 3528-3589; Discover,
    // UnionPay, Maestro and RuPay 6.
    let issued = match d.first() {
        Some(4 | 6) => true,
        Some(5) => (50..=59).contains(&prefix(2)),
        Some(2) => (2221..=2720).contains(&prefix(4)),
        Some(3) => {
            matches!(prefix(2), 34 | 36..=39)
                || (300..=305).contains(&prefix(3))
                || (3528..=3589).contains(&prefix(4))
        }
        _ => false,
    };
    issued && luhn(s)
}

fn phone_ok(s: &str) -> bool {
    let n = digits(s).len();
    (if s.starts_with('+') { 8..=15 } else { 10..=10 }).contains(&n)
}

/// Known key prefixes pass; a bare long token must mix upper case, lower
/// case and digits (hex digests and words do not).
fn api_key_ok(s: &str) -> bool {
    let known = [
        "sk-", "pk-", "rk-", "sk_", "pk_", "rk_", "gh", "xox", "AKIA", "AIza",
    ];
    if known.iter().any(|p| s.starts_with(p)) {
        return s.len() >= 20;
    }
    s.chars().any(|c| c.is_ascii_uppercase())
        && s.chars().any(|c| c.is_ascii_lowercase())
        && s.chars().any(|c| c.is_ascii_digit())
}

fn always(_: &str) -> bool {
    true
}

impl Detector {
    /// A built-in detector by name.
    pub(crate) fn built_in(name: &str) -> Option<Detector> {
        let made = |re: &Regex, check: fn(&str) -> bool| Detector {
            kind: name.to_string(),
            re: re.clone(),
            check,
        };
        Some(match name {
            "email" => made(&EMAIL, always),
            "phone" => made(&PHONE, phone_ok),
            "card" => made(&CARD, card_ok),
            "iban" => made(&IBAN, iban_ok),
            "api_key" => made(&API_KEY, api_key_ok),
            _ => return None,
        })
    }

    /// A detector of a custom regular expression.
    pub(crate) fn custom(kind: &str, pattern: &str) -> Result<Detector, String> {
        // regex's own account draws the pattern over lines: its last line
        // says what is wrong, and an input error is one line.
        let re = Regex::new(pattern).map_err(|e| {
            let said = e.to_string();
            let why = said
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            format!(
                "not a regular expression: {}",
                why.trim().trim_start_matches("error: ")
            )
        })?;
        if re.is_match("") {
            return Err("the pattern matches empty text, which would put a placeholder between every character: make it match at least one character (`a+` for `a*`)".into());
        }
        Ok(Detector {
            kind: kind.to_string(),
            re,
            check: always,
        })
    }

    /// The byte ranges of what this detector finds in `text`.
    pub(crate) fn find(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        // An empty match (`\b`, which the check of an empty pattern at
        // parse cannot see) hides nothing.
        for m in self.re.find_iter(text).filter(|m| !m.is_empty()) {
            let mut end = m.end();
            // An IBAN match may run into a following word: drop trailing
            // groups until the check holds.
            loop {
                let candidate = &text[m.start()..end];
                if (self.check)(candidate) {
                    out.push((m.start(), end));
                    break;
                }
                match candidate.rfind(' ') {
                    Some(i) if self.kind == "iban" => end = m.start() + i,
                    _ => break,
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(kind: &str, text: &str) -> Vec<String> {
        let d = Detector::built_in(kind).unwrap();
        d.find(text)
            .into_iter()
            .map(|(a, b)| text[a..b].to_string())
            .collect()
    }

    #[test]
    fn emails() {
        assert_eq!(
            found("email", "mail ana.lopez+ops@example.co.uk now"),
            ["ana.lopez+ops@example.co.uk"]
        );
        assert!(found("email", "no at sign here, nor user@localhost").is_empty());
    }

    #[test]
    fn phones_international_or_ten_digit_national() {
        assert_eq!(
            found("phone", "call +44 20 7946 0958."),
            ["+44 20 7946 0958"]
        );
        assert_eq!(
            found("phone", "or (415) 555-0132 or 415-555-0199"),
            ["(415) 555-0132", "415-555-0199"]
        );
        assert!(
            found("phone", "on 2026-03-01 at 12:00, id 12345").is_empty(),
            "dates are not phones"
        );
    }

    #[test]
    fn cards_need_a_valid_luhn_checksum() {
        assert_eq!(
            found("card", "card 4111 1111 1111 1111 ok"),
            ["4111 1111 1111 1111"]
        );
        assert_eq!(
            found("card", "5500-0000-0000-0004"),
            ["5500-0000-0000-0004"]
        );
        assert!(
            found("card", "order 4111 1111 1111 1112").is_empty(),
            "bad checksum"
        );
        assert!(luhn("378282246310005"));
        assert_eq!(found("card", "amex 378282246310005"), ["378282246310005"]);
    }

    #[test]
    fn a_run_ids_date_and_time_is_not_a_card_though_its_checksum_holds() {
        assert!(luhn("20261128132556"), "the digits pass the checksum");
        assert!(
            found("card", "run 20261128132556-0afb817e passed").is_empty(),
            "no network issues cards starting 2026"
        );
    }

    #[test]
    fn ibans_need_a_valid_mod_97_check() {
        assert_eq!(
            found("iban", "pay DE89 3704 0044 0532 0130 00 TODAY"),
            ["DE89 3704 0044 0532 0130 00"]
        );
        assert_eq!(
            found("iban", "GB82WEST12345698765432"),
            ["GB82WEST12345698765432"]
        );
        assert!(
            found("iban", "GB83WEST12345698765432").is_empty(),
            "bad check digits"
        );
    }

    #[test]
    fn api_keys_by_prefix_or_mixed_long_tokens() {
        assert_eq!(
            found("api_key", "key sk-proj-abcdefghijklmnop1234 end"),
            ["sk-proj-abcdefghijklmnop1234"]
        );
        assert_eq!(
            found("api_key", "AKIAIOSFODNN7EXAMPLE"),
            ["AKIAIOSFODNN7EXAMPLE"]
        );
        assert_eq!(
            found("api_key", "token Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz"),
            ["Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz"]
        );
        let sha = "3f9a0c1b2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a";
        assert!(found("api_key", sha).is_empty(), "hex digests are not keys");
    }

    #[test]
    fn custom_patterns() {
        let d = Detector::custom("customer", r"CUST-\d{6}").unwrap();
        assert_eq!(d.find("for CUST-004211 and CUST-1"), [(4, 15)]);
        assert!(Detector::custom("bad", "(").is_err());
    }
}
