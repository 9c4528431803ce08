//! The `similar` operator's measure: how alike two texts are, as Python's
//! `difflib.SequenceMatcher(None, a, b).ratio()` computes it (the same
//! matching blocks over characters, its "popular element" heuristic for a
//! second text of 200 characters or more included), so a check agrees with
//! a benchmark that grades with it (AgentDojo workspace's
//! `ratio() >= 0.95`; decision
//! [0384](../../../../docs/decisions/0384-check-forms-for-agentdojo-workspace.md)).

use std::collections::{BTreeMap, BTreeSet};

/// `2 * M / T`: M the characters of the matching blocks difflib finds, T
/// the two texts' lengths in characters; 1 for two empty texts. Not
/// symmetric (difflib's is not): `a` is the expected text, `b` the one
/// judged.
pub(crate) fn ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    let index = places(&b);
    let mut matched = 0;
    let mut queue = vec![(0, a.len(), 0, b.len())];
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = longest_match(&a, &b, &index, (alo, ahi), (blo, bhi));
        if k > 0 {
            matched += k;
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    2.0 * matched as f64 / total as f64
}

/// Python's `str.strip()`: `text` without the characters `str.isspace`
/// calls white space at either end (Unicode's, and the separators
/// U+001C to U+001F).
pub(crate) fn strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// `__chain_b`: where each character of `b` is, less the popular ones (more
/// than 1% of a text of 200 characters or more), which only extend a match.
fn places(b: &[char]) -> BTreeMap<char, Vec<usize>> {
    let mut index: BTreeMap<char, Vec<usize>> = BTreeMap::new();
    for (j, c) in b.iter().enumerate() {
        index.entry(*c).or_default().push(j);
    }
    if b.len() >= 200 {
        let most = b.len() / 100 + 1;
        let popular: BTreeSet<char> = index
            .iter()
            .filter(|(_, js)| js.len() > most)
            .map(|(c, _)| *c)
            .collect();
        index.retain(|c, _| !popular.contains(c));
    }
    index
}

/// `find_longest_match(alo, ahi, blo, bhi)` with no junk: the longest
/// block of `a[alo..ahi]` equal to one of `b[blo..bhi]`, the earliest in
/// `a` (then in `b`) among the longest, extended over popular characters.
fn longest_match(
    a: &[char],
    b: &[char],
    index: &BTreeMap<char, Vec<usize>>,
    (alo, ahi): (usize, usize),
    (blo, bhi): (usize, usize),
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut best) = (alo, blo, 0);
    // `j2len`: the length of the match ending at b[j] and a[i - 1].
    let mut ending: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, c) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut next = BTreeMap::new();
        for &j in index.get(c).map_or(&[][..], Vec::as_slice) {
            if j < blo {
                continue;
            }
            if j >= bhi {
                break;
            }
            let k = j.checked_sub(1).and_then(|p| ending.get(&p)).unwrap_or(&0) + 1;
            next.insert(j, k);
            if k > best {
                (besti, bestj, best) = (i + 1 - k, j + 1 - k, k);
            }
        }
        ending = next;
    }
    while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
        (besti, bestj, best) = (besti - 1, bestj - 1, best + 1);
    }
    while besti + best < ahi && bestj + best < bhi && a[besti + best] == b[bestj + best] {
        best += 1;
    }
    (besti, bestj, best)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each figure is what CPython 3.11's
    /// `difflib.SequenceMatcher(None, a, b).ratio()` prints for the pair.
    #[test]
    fn ratios_are_difflibs() {
        assert_eq!(ratio("", ""), 1.0);
        assert_eq!(ratio("abc", ""), 0.0);
        assert_eq!(ratio("abcd", "bcde"), 0.75);
        // The docstring's example: 2 * 18 / 62.
        assert_eq!(
            ratio(
                "private Thread currentThread;",
                "private volatile Thread currentThread;"
            ),
            0.8656716417910447
        );
        assert_eq!(ratio("abxcd", "abcd"), 0.8888888888888888);
        assert_eq!(ratio("Hi Sara,", "Hi Sarah,"), 0.9411764705882353);
        // Not symmetric: the longest match is the first found in `a`.
        assert_eq!(ratio("tide", "diet"), 0.25);
        assert_eq!(ratio("diet", "tide"), 0.5);
    }

    /// A second text of 200 characters or more leaves the characters making
    /// more than 1% of it out of the index (difflib's autojunk): they only
    /// extend a match found on the others. Without that, 0.4.
    #[test]
    fn popular_characters_of_a_long_text_only_extend_a_match() {
        let a = "Hi Michael, see https://bit.ly/x today. ".repeat(2);
        let b = "Hi Michael,\n\nsee the notes at https://bit.ly/x today, please. ".repeat(5);
        assert_eq!(ratio(&a, &b), 0.05641025641025641);
        assert_eq!(ratio("xaaaa", &format!("x{}", "a".repeat(250))), 0.0390625);
    }

    #[test]
    fn strip_is_pythons() {
        assert_eq!(strip(" \n\u{1f}Hi\u{a0}\t"), "Hi");
        assert_eq!(strip("x\u{200b}"), "x\u{200b}");
    }
}
