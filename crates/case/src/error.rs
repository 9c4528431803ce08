//! Errors a user can act on, and the exit codes the CLI maps them to.
//!
//! Exit codes: 0 success/pass, 1 graded failure or divergence, 2 usage or
//! input error, 3 agent fault, 4 internal error.

use std::fmt;
use std::path::{Path, PathBuf};

/// Bad input: a file that is missing, malformed or refers to something that
/// does not exist. Always names the file, and the line and column when the
/// problem has a place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: PathBuf,
    pub line: Option<(usize, usize)>,
    pub message: String,
    /// A database store's server could not be reached or went away, or
    /// refused what a command wrote ([`InputError::of_store`]): exit 2
    /// naming the store, but nothing the user gave was wrong (`--json`'s
    /// kind `store`, not `input`; the UI's 503, not 400).
    pub store: bool,
}

impl InputError {
    pub fn new(file: impl AsRef<Path>, message: impl Into<String>) -> Self {
        InputError {
            file: file.as_ref().to_path_buf(),
            line: None,
            message: message.into(),
            store: false,
        }
    }

    /// An error of a database store's server (named by `file`): it could
    /// not be reached, went away, or refused what was written.
    pub fn of_store(file: impl AsRef<Path>, message: impl Into<String>) -> Self {
        InputError {
            store: true,
            ..InputError::new(file, message)
        }
    }

    pub fn at(
        file: impl AsRef<Path>,
        source: &str,
        offset: usize,
        message: impl Into<String>,
    ) -> Self {
        InputError {
            line: Some(line_col(source, offset)),
            ..InputError::new(file, message)
        }
    }

    /// The same error at a line (column 1); line 0 means no line.
    pub fn with_line(self, line: usize) -> Self {
        InputError {
            line: (line > 0).then_some((line, 1)),
            ..self
        }
    }

    /// The text of a file's bytes. Bytes that are not UTF-8 are an error
    /// at the line and column of the first bad one.
    pub fn utf8(file: impl AsRef<Path>, bytes: Vec<u8>) -> Result<String, Self> {
        String::from_utf8(bytes).map_err(|e| {
            let valid = e.utf8_error().valid_up_to();
            let before = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
            InputError::at(
                file,
                &before,
                valid,
                "not UTF-8 text (save the file as UTF-8)",
            )
        })
    }

    /// From a TOML parse/deserialize error, keeping its span as line:column.
    /// A value of the wrong type or out of range is named by its key.
    pub fn toml(file: impl AsRef<Path>, source: &str, err: &toml::de::Error) -> Self {
        let message = in_words(err.message().trim());
        match err.span() {
            Some(span) => {
                let message = match key_of_value(source, span.start) {
                    Some(key) if message.starts_with("invalid ") => format!("{key}: {message}"),
                    _ => message,
                };
                InputError::at(file, source, span.start, message)
            }
            // The reader's depth limit on a dotted key or a table header
            // comes without a place: the first such key's line is it.
            None if message == "recursion limit" => {
                let said = format!(
                    "a key or table header of more than {TOML_DEPTH} dotted parts (`a.b.c…`) is nested deeper than the reader goes: write it flatter"
                );
                match too_deep_key(source) {
                    Some(at) => InputError::at(file, source, at, said),
                    None => InputError::new(file, said),
                }
            }
            None => InputError::new(file, message),
        }
    }
}

/// What is wrong with a user's regular expression `pattern`, on one line
/// (the `regex` crate draws the pattern over lines, with a caret under the
/// place): `regex `(a`: regex parse error: unclosed group (at column 1)`,
/// the pattern shown escaped. The place is `regex-syntax`'s own account
/// of the pattern, parsed again (the column counts characters, from 1); a
/// pattern over lines, or one the parser takes (a compiled regex past its
/// size), is said without one.
pub fn regex_error(pattern: &str, e: &regex::Error) -> String {
    let why = match regex_syntax::Parser::new().parse(pattern) {
        Err(syntax) => {
            let (kind, column) = match &syntax {
                regex_syntax::Error::Parse(e) => (e.kind().to_string(), e.span().start.column),
                regex_syntax::Error::Translate(e) => (e.kind().to_string(), e.span().start.column),
                _ => (syntax.to_string(), 0),
            };
            if pattern.contains('\n') || column == 0 {
                format!("regex parse error: {kind}")
            } else {
                format!("regex parse error: {kind} (at column {column})")
            }
        }
        Ok(_) => e.to_string().lines().collect::<Vec<_>>().join(" "),
    };
    format!("regex `{}`: {why}", crate::shown::text(pattern))
}

/// The most dotted parts a TOML key or table header may have (the `toml`
/// reader's recursion limit).
const TOML_DEPTH: usize = 80;

/// Where the first key or table header of [`TOML_DEPTH`] dotted parts or
/// more begins: its line's start.
fn too_deep_key(source: &str) -> Option<usize> {
    let mut at = 0;
    for line in source.split_inclusive('\n') {
        let t = line.trim_start();
        let key = match t.strip_prefix('[') {
            Some(header) => header.split(']').next().unwrap_or(""),
            None => t.split('=').next().unwrap_or(""),
        };
        if key.matches('.').count() + 1 >= TOML_DEPTH {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// The key whose value starts at `offset` (`latency_ms` of `latency_ms =
/// "fast"`), with its table's header when it is on a line of its own
/// (`[model] latency_ms`); `None` when no `key =` is before it on its line.
fn key_of_value(source: &str, offset: usize) -> Option<String> {
    let before = source.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = &before[line_start..];
    let (head, value) = line.rsplit_once('=')?;
    if !value.trim().is_empty() {
        return None;
    }
    let start = head.rfind(['{', ',']).map_or(0, |i| i + 1);
    let key = head[start..].trim();
    if key.is_empty() || key.contains(['[', ']']) {
        return None;
    }
    let inline = start > 0;
    let table = (!inline)
        .then(|| {
            before[..line_start]
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| l.starts_with('['))
        })
        .flatten();
    Some(match table {
        Some(t) => format!("{} {key}", t.split('#').next().unwrap_or(t).trim()),
        None => key.to_string(),
    })
}

/// Serde's names of Rust's types in a message, in words: `expected u64`
/// is "expected a whole number from 0 to 18446744073709551615", an
/// integer past 2^63 − 1 (which the TOML reader hands over `as i128`) is
/// said to be out of range, and `expected struct LatencyFault` (a type's
/// name in this code, which no user wrote) or `expected a map` is
/// "expected a table"; the TOML reader's "wanted string or table" (a
/// number where a name is meant) is said as a type error.
pub(crate) fn in_words(message: &str) -> String {
    if let Some((head, ty)) = message.rsplit_once("expected struct ")
        && !ty.is_empty()
        && ty.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return format!("{head}expected a table");
    }
    if let Some(head) = message.strip_suffix("expected a map") {
        return format!("{head}expected a table");
    }
    // Quotes around what TOML writes bare, with what to write instead.
    if message.starts_with("invalid type: string ") {
        if message.ends_with("expected a TOML datetime") {
            return format!("{message}: write it without quotes (clock = 2026-03-01T12:00:00Z)");
        }
        if message.ends_with("expected a sequence") {
            return format!("{message}: write a list, in brackets ([\"…\"])");
        }
    }
    // The TOML reader's word for a value where one of a set of names is
    // meant, said as the other type errors are (so its key is named).
    if message == "wanted string or table" {
        return "invalid type: expected a string (one of its names) or a table".into();
    }
    let ranges: [(&str, i128, i128); 7] = [
        ("u8", 0, u8::MAX.into()),
        ("u16", 0, u16::MAX.into()),
        ("u32", 0, u32::MAX.into()),
        ("u64", 0, u64::MAX.into()),
        ("usize", 0, u64::MAX.into()),
        ("i32", i32::MIN.into(), i32::MAX.into()),
        ("i64", i64::MIN.into(), i64::MAX.into()),
    ];
    let Some((head, ty)) = message.rsplit_once("expected ") else {
        return message.to_string();
    };
    // An integer past TOML's (its reader says "as i128"), said as "invalid
    // value" so that its key is named before it.
    let past = head
        .strip_prefix("invalid type: integer ")
        .and_then(|h| h.strip_suffix(" as i128, "));
    let Some((_, lo, hi)) = ranges.iter().find(|(name, ..)| *name == ty) else {
        return match past {
            Some(n) => {
                let expected = match ty {
                    "any valid TOML value" => String::new(),
                    ty => format!(": expected {ty}"),
                };
                format!(
                    "invalid value: integer {n} is past TOML's integers ({} to {}){expected}",
                    i64::MIN,
                    i64::MAX
                )
            }
            None => message.to_string(),
        };
    };
    let head = match past {
        Some(n) => format!("invalid value: integer {n} is out of range: "),
        None => head.to_string(),
    };
    format!("{head}expected a whole number from {lo} to {hi}")
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A line break in the file's name is written `\n`: the error is one
        // line (`check` printed a case named `bad\nPASS  x.toml` as two,
        // the second a forged one).
        let file = self.file.display().to_string();
        write!(f, "{}", crate::shown::one_line(&file))?;
        if let Some((line, col)) = self.line {
            write!(f, ":{line}:{col}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

impl InputError {
    /// From a JSON parse error, `what` the file is not (`is not a JSON
    /// report`): placed at serde's line and column, its message without
    /// them (it said `f:36:1: ... at line 36 column 4`).
    pub fn json(file: impl AsRef<Path>, what: &str, e: &serde_json::Error) -> Self {
        let said = e.to_string();
        let said = said
            .strip_suffix(&format!(" at line {} column {}", e.line(), e.column()))
            .unwrap_or(&said);
        InputError {
            line: (e.line() > 0).then_some((e.line(), e.column().max(1))),
            ..InputError::new(file, format!("{what}: {said}"))
        }
    }

    /// An address the command was given that it cannot listen on (a port
    /// in use): the flag's input error, not an internal one.
    pub fn cannot_listen(flag: &str, addr: impl fmt::Display, e: &std::io::Error) -> InputError {
        InputError::new(
            flag,
            format!("cannot listen on {addr}: {e}; choose another port (0: any free one)"),
        )
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The input error `err` is or holds.
pub fn input_of(err: &anyhow::Error) -> Option<&InputError> {
    err.chain().find_map(|e| e.downcast_ref::<InputError>())
}

/// Whether `err` is a database store's server away (or refusing a
/// write): [`InputError::store`].
pub fn is_store(err: &anyhow::Error) -> bool {
    input_of(err).is_some_and(|e| e.store)
}

/// Whether `err` is a problem with the user's input (somewhere in its
/// chain an [`InputError`], a store's included), not a
/// failure of worldline or the machine.
pub fn is_input(err: &anyhow::Error) -> bool {
    input_of(err).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file whose name holds a line break is named on one line (a case
    /// named `bad\nPASS  x.toml` printed a forged `PASS` line).
    #[test]
    fn a_line_break_in_the_file_s_name_is_written_escaped() {
        let e = InputError::new("cases/bad\nPASS  x.toml", "no `world`").with_line(2);
        assert_eq!(e.to_string(), "cases/bad\\nPASS  x.toml:2:1: no `world`");
    }

    /// A type error names its key (and table): the line said where, the
    /// message only what was expected.
    #[test]
    fn a_value_of_the_wrong_type_is_named_by_its_key() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Limits {
            fuel: u64,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Doc {
            seed: Option<u64>,
            limits: Option<Limits>,
            task: Option<std::collections::BTreeMap<String, u64>>,
        }
        let said = |src: &str| {
            let e = toml::from_str::<Doc>(src).unwrap_err();
            InputError::toml("c.toml", src, &e).to_string()
        };
        let s = said("seed = 1\n\n[limits] # how far\nfuel = \"lots\"\n");
        assert!(
            s.starts_with("c.toml:4:8: [limits] fuel: invalid type: string \"lots\""),
            "{s}"
        );
        let s = said("seed = \"x\"\n");
        assert!(s.starts_with("c.toml:1:8: seed: invalid type"), "{s}");
        let s = said("task = { a = 1, b = \"two\" }\n");
        assert!(s.starts_with("c.toml:1:21: b: invalid type"), "{s}");
        // Not a value's error: as it was.
        let s = said("[limits]\n");
        assert!(
            s.contains("missing field `fuel`") && !s.contains("limits]:"),
            "{s}"
        );
    }

    /// A dotted key or table header past the reader's depth is said at
    /// its line, with what to do (it was `c.toml: recursion limit`).
    #[test]
    fn a_key_nested_past_the_reader_s_depth_is_said_at_its_line() {
        let deep = vec!["a"; 100].join(".");
        for src in [
            format!("seed = 1\ntask.{deep} = 1\n"),
            format!("seed = 1\n\n[{deep}]\nx = 1\n"),
        ] {
            let e = toml::from_str::<toml::Table>(&src).unwrap_err();
            let s = InputError::toml("c.toml", &src, &e).to_string();
            let line = if src.contains('[') { 3 } else { 2 };
            assert!(
                s.starts_with(&format!(
                    "c.toml:{line}:1: a key or table header of more than 80 dotted parts"
                )),
                "{s}"
            );
            assert!(s.ends_with("write it flatter"), "{s}");
        }
    }

    #[test]
    fn a_regex_error_is_one_line_with_its_column() {
        // A pattern over lines has no column of its own: it is shown
        // escaped, on the one line.
        for (pattern, said) in [
            (
                "ab(c",
                "regex `ab(c`: regex parse error: unclosed group (at column 3)",
            ),
            (
                "a\n(",
                "regex `a\\u{a}(`: regex parse error: unclosed group",
            ),
        ] {
            let e = regex::Regex::new(pattern).unwrap_err();
            assert_eq!(regex_error(pattern, &e), said);
        }
    }

    #[test]
    fn offsets_become_one_based_lines_and_columns() {
        let src = "a = 1\nbb = [\n  x\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 6), (2, 1));
        assert_eq!(line_col(src, 11), (2, 6));
        assert_eq!(line_col(src, 15), (3, 3));
    }

    #[test]
    fn integer_types_are_said_in_words() {
        assert_eq!(
            in_words("invalid type: integer `99999999999999999999999` as i128, expected u64"),
            "invalid value: integer `99999999999999999999999` is out of range: expected a whole number from 0 to 18446744073709551615"
        );
        // Where any value is taken (a project file's `jobs`), or a number
        // of the reader's own ("as i128, expected any valid TOML value").
        assert_eq!(
            in_words(
                "invalid type: integer `99999999999999999999` as i128, expected any valid TOML value"
            ),
            "invalid value: integer `99999999999999999999` is past TOML's integers (-9223372036854775808 to 9223372036854775807)"
        );
        assert_eq!(
            in_words(
                "invalid type: integer `99999999999999999999` as i128, expected a whole number"
            ),
            "invalid value: integer `99999999999999999999` is past TOML's integers (-9223372036854775808 to 9223372036854775807): expected a whole number"
        );
        assert_eq!(
            in_words("invalid value: integer `-5`, expected u32"),
            "invalid value: integer `-5`, expected a whole number from 0 to 4294967295"
        );
        assert_eq!(in_words("missing field `task`"), "missing field `task`");
        assert_eq!(in_words("expected a string"), "expected a string");
    }

    /// A quoted date or list is said with what to write instead.
    #[test]
    fn quotes_around_a_date_or_a_list_are_said_with_the_fix() {
        assert_eq!(
            in_words(r#"invalid type: string "2026-03-01T09:00:00Z", expected a TOML datetime"#),
            r#"invalid type: string "2026-03-01T09:00:00Z", expected a TOML datetime: write it without quotes (clock = 2026-03-01T12:00:00Z)"#
        );
        assert!(
            in_words(r#"invalid type: string "cases", expected a sequence"#)
                .ends_with("write a list, in brackets ([\"…\"])")
        );
    }

    #[test]
    fn a_table_is_said_as_a_table_not_by_its_type_in_this_code() {
        assert_eq!(
            in_words("invalid type: integer `-5`, expected struct LatencyFault"),
            "invalid type: integer `-5`, expected a table"
        );
        assert_eq!(
            in_words("invalid type: string \"x\", expected a map"),
            "invalid type: string \"x\", expected a table"
        );
        assert_eq!(
            in_words("wanted string or table"),
            "invalid type: expected a string (one of its names) or a table"
        );
        assert_eq!(
            in_words("expected struct with a name, unlike this"),
            "expected struct with a name, unlike this"
        );
    }

    #[test]
    fn bad_utf8_is_placed_at_its_first_byte() {
        let e = InputError::utf8("w.toml", b"a = 1\nb = \"\xff\"\n".to_vec()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "w.toml:2:6: not UTF-8 text (save the file as UTF-8)"
        );
        assert_eq!(InputError::utf8("w.toml", b"ok".to_vec()).unwrap(), "ok");
    }

    #[test]
    fn display_names_file_line_and_column() {
        let e = InputError::at("cases/a.toml", "x\ny", 2, "bad");
        assert_eq!(e.to_string(), "cases/a.toml:2:1: bad");
    }
}
