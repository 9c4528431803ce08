//! Random mutations of valid documents for the readers' property tests
//! (flipped bytes, cut ranges, spliced tokens, duplicated lines), shared
//! by the case, log and engine crates' tests (`#[path]`-included).

use proptest::prelude::*;

/// Tokens that tend to break parsers, spliced into valid documents.
const TOKENS: &[&str] = &[
    "[",
    "]",
    "[[",
    "{",
    "}",
    "\"",
    "'",
    "=",
    ",",
    "\n",
    "\\",
    "*",
    "**********",
    "..",
    "../",
    "-1",
    "0",
    "1e400",
    "18446744073709551616",
    "nan",
    "inf",
    "true",
    "\u{0}",
    "\u{feff}",
    "é",
    "\"\"\"",
    "#",
    ":",
    "null",
    "@v",
    "T",
    "Z",
    "2026-13-45T99:99:99Z",
    "[limits]\n",
    "[permissions]\n",
    "deny = [\"*\"]\n",
    "fuel = 0\n",
    "tick_us = 9223372036854775807\n",
];

/// One mutation: (kind, position, byte, token).
pub type Mutation = (u8, usize, u8, usize);

pub fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec((0u8..5, any::<usize>(), any::<u8>(), 0..TOKENS.len()), 1..6)
}

pub fn mutate(seed: &[u8], ops: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for &(kind, pos, byte, token) in ops {
        let at = if b.is_empty() { 0 } else { pos % (b.len() + 1) };
        match kind {
            0 if !b.is_empty() => {
                let i = at.min(b.len() - 1);
                b[i] ^= byte | 1;
            }
            1 => {
                let end = (at + 1 + byte as usize).min(b.len());
                b.drain(at..end);
            }
            2 => {
                let t = TOKENS[token].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            3 => {
                // Duplicate the line holding `at`.
                let start = b[..at]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |i| i + 1);
                let end = b[at..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |i| at + i + 1);
                let line = b[start..end].to_vec();
                b.splice(end..end, line);
            }
            _ => b.truncate(at),
        }
    }
    b
}
