//! A TOML file (a case, the project file) read section by section: a
//! section of the wrong type (a `seed = -1`, an unknown key) is a problem,
//! and the rest is read without it, so that `check` lists the other
//! sections' problems too (it listed the first alone).

use crate::error::InputError;
use std::path::Path;

/// The most sections of the wrong type read past, each a problem of its
/// own, before the reading stops.
const MAX_UNREAD: usize = 32;

/// `text` read as a `T`, each section of the wrong type a problem and
/// read without. The section is blanked, not cut: every other place keeps
/// its line and column. A problem of a key in `required` (the file cannot
/// be read without it), or one not in any section, ends the reading.
pub(crate) fn read<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    required: &[&str],
) -> Result<(T, Vec<InputError>), Vec<InputError>> {
    let mut read = text.to_string();
    let mut unread = Vec::new();
    loop {
        let e = match toml::from_str::<T>(&read) {
            Ok(doc) => return Ok((doc, unread)),
            Err(e) => e,
        };
        unread.push(InputError::toml(path, &read, &e));
        let section = e
            .span()
            .and_then(|s| section_at(&read, s.start))
            .filter(|(name, _)| !required.contains(&name.as_str()));
        let Some((_, ranges)) = section.filter(|_| unread.len() < MAX_UNREAD) else {
            return Err(unread);
        };
        let mut bytes = std::mem::take(&mut read).into_bytes();
        for r in ranges {
            for b in &mut bytes[r] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        // Only ASCII and whole lines were blanked (see `section_at`).
        read = String::from_utf8(bytes).map_err(|_| unread.clone())?;
    }
}

/// The top-level section `offset` is in, and the byte ranges of the lines
/// that write it: a `[name...]` or `[[name...]]` table (every one of that
/// name), or a `name = value` at the top (its key to its value's end).
fn section_at(text: &str, offset: usize) -> Option<(String, Vec<std::ops::Range<usize>>)> {
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |at, l| {
            let start = *at;
            *at += l.len();
            Some((start, l))
        })
        .collect();
    let header = |l: &str| -> Option<String> {
        let t = l.trim_start();
        let inner = t.strip_prefix("[[").or_else(|| t.strip_prefix('['))?;
        let name = inner.split(['.', ']']).next()?.trim().trim_matches('"');
        (!name.is_empty()).then(|| name.to_string())
    };
    let at = lines.iter().rposition(|(start, _)| *start <= offset)?;
    if let Some(name) = lines[..=at].iter().rev().find_map(|(_, l)| header(l)) {
        // Every table of that name, from its header to the next header.
        let mut ranges = Vec::new();
        let mut inside = false;
        for (start, l) in &lines {
            if let Some(h) = header(l) {
                inside = h == name;
            }
            if inside {
                ranges.push(*start..start + l.len());
            }
        }
        return Some((name, ranges));
    }
    // A key at the top: its entry, from its key to its value's end.
    let entries: toml::de::DeTable = toml::de::DeTable::parse(text).ok()?.into_inner();
    entries.iter().find_map(|(key, value)| {
        let (k, v) = (key.span(), value.span());
        (k.start <= offset && offset < v.end.max(k.end)).then(|| {
            let from = text[..k.start].rfind('\n').map_or(0, |i| i + 1);
            let to = text[v.end..].find('\n').map_or(text.len(), |i| v.end + i);
            (
                key.get_ref().to_string(),
                std::iter::once(from..to).collect(),
            )
        })
    })
}

/// Where the key `key` of the table whose header starts at `header` in
/// `text` begins: the first line of the table (up to the next header)
/// that starts with it (`key = …` or a dotted `key.part = …`), so a
/// problem of one key is placed at its own line. `None` when no line does
/// (a table written inline).
pub(crate) fn key_in(text: &str, header: usize, key: &str) -> Option<usize> {
    let mut lines = text.get(header..)?.split_inclusive('\n');
    let mut at = header + lines.next()?.len();
    for line in lines {
        let written = line.trim_start();
        if written.starts_with('[') {
            return None;
        }
        if let Some(rest) = written.strip_prefix(key)
            && matches!(rest.trim_start().chars().next(), Some('=' | '.'))
        {
            return Some(at + line.len() - written.len());
        }
        at += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::key_in;

    /// A key is found at its own line, dotted or not, and not in a
    /// comment, in another key that starts with its name, past the next
    /// header, or in a table written inline.
    #[test]
    fn a_key_is_found_at_its_own_line_of_its_table() {
        let text = "[[tools]]\ntool = \"a\"\n# deny = 1\ndeny_x = 1\n  deny = 2\nstale.p = 1\n[[tools]]\nempty = 1\n";
        assert_eq!(key_in(text, 0, "deny"), text.find("deny = 2"));
        assert_eq!(key_in(text, 0, "stale"), text.find("stale.p"));
        assert_eq!(key_in(text, 0, "empty"), None);
        assert_eq!(key_in("t = [{ deny = 2 }]\n", 4, "deny"), None);
    }
}
