//! Integers in JSON text that no 64-bit integer holds. serde_json (built
//! without `arbitrary_precision`, which would change how every number is
//! held) reads such a literal as the nearest float, without a word: a
//! world's row id `18446744073709551616` became `1.8446744073709552e19`,
//! and a `--set` patch wrote the float. Where a user's JSON is read, the
//! text is looked at for one and refused at its line and column; a float
//! written as one (`1e20`, `18446744073709551616.0`) is the user's to give.
//! The walk of JSON text outside its strings this needs
//! ([`outside_strings`]) also finds the line each row of a rows file
//! starts on (`world/rows.rs`).

/// An integer literal past 64 bits, where it starts.
#[derive(Debug, PartialEq, Eq)]
pub struct Wide<'a> {
    /// 1-based, as serde_json counts.
    pub line: usize,
    /// 1-based, in bytes from the line's start.
    pub column: usize,
    /// The literal as written.
    pub digits: &'a str,
}

impl Wide<'_> {
    /// What to say of it.
    pub fn message(&self) -> String {
        format!(
            "the integer {} is past 64 bits: JSON is read here with integers from {} to {}, and it would be read as the nearest float; write it as a string (\"{}\"), or as a float if one is meant",
            self.digits,
            i64::MIN,
            u64::MAX,
            self.digits
        )
    }
}

/// The first integer literal in `text` (JSON that has parsed) that neither
/// an `i64` nor a `u64` holds. A text without a run of 19 digits (as few
/// as the shortest such literal has) is not scanned.
pub fn find(text: &str) -> Option<Wide<'_>> {
    let bytes = text.as_bytes();
    let mut run = 0;
    if !bytes.iter().any(|b| {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        run >= 19
    }) {
        return None;
    }
    let (mut line, mut line_start, mut after) = (1, 0, 0);
    for (i, b) in outside_strings(text) {
        if b == b'\n' {
            line += 1;
            line_start = i + 1;
        }
        if i < after || !(b == b'-' || b.is_ascii_digit()) {
            continue;
        }
        // A number's token (no quote is in one, so the walk is not misled).
        after = bytes[i..]
            .iter()
            .position(|c| !(c.is_ascii_digit() || b"+-.eE".contains(c)))
            .map_or(bytes.len(), |n| i + n);
        let digits = &text[i..after];
        let integer = !digits.contains(['.', 'e', 'E']);
        let fits = if digits.starts_with('-') {
            digits.parse::<i64>().is_ok()
        } else {
            digits.parse::<u64>().is_ok()
        };
        if integer && !fits {
            return Some(Wide {
                line,
                column: i - line_start + 1,
                digits,
            });
        }
    }
    None
}

/// Each byte of JSON text (that has parsed) outside its strings, with its
/// index: a string's opening quote, not the rest of it. A parsed text has
/// no raw newline inside a string, so counting the newlines given counts
/// the text's lines.
pub(crate) fn outside_strings(text: &str) -> impl Iterator<Item = (usize, u8)> + '_ {
    let (mut in_string, mut escaped) = (false, false);
    text.bytes().enumerate().filter(move |&(_, b)| {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            return false;
        }
        in_string = b == b'"';
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_past_64_bits_is_found_where_it_starts() {
        let text = "[\n  {\"id\": 18446744073709551615, \"n\": -9223372036854775808},\n  {\"id\": 18446744073709551616}\n]";
        assert_eq!(
            find(text),
            Some(Wide {
                line: 3,
                column: 10,
                digits: "18446744073709551616"
            })
        );
        let low = find("{\"n\": -9223372036854775809}").unwrap();
        assert_eq!((low.line, low.column), (1, 7));
        assert!(low.message().starts_with(
            "the integer -9223372036854775809 is past 64 bits: JSON is read here with integers from -9223372036854775808 to 18446744073709551615"
        ));
    }

    /// Floats however long, integers that fit, and digits in strings
    /// (escaped quotes included) are not integers past 64 bits.
    #[test]
    fn floats_fitting_integers_and_strings_are_not() {
        for text in [
            "[18446744073709551615, -9223372036854775808, 0, -1]",
            "[18446744073709551616.0, 1e20, 184467440737095516160E-1, -99999999999999999999.5]",
            "{\"id\": \"18446744073709551616\", \"q\": \"a\\\"99999999999999999999\"}",
            "{\"99999999999999999999\": 1}",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
        // serde_json reads each of these as a float: the bug this finds.
        let v: serde_json::Value = serde_json::from_str("[18446744073709551616]").unwrap();
        assert!(v[0].is_f64());
    }
}
