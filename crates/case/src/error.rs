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
}

impl InputError {
    pub fn new(file: impl AsRef<Path>, message: impl Into<String>) -> Self {
        InputError {
            file: file.as_ref().to_path_buf(),
            line: None,
            message: message.into(),
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
    pub fn toml(file: impl AsRef<Path>, source: &str, err: &toml::de::Error) -> Self {
        let message = in_words(err.message().trim());
        match err.span() {
            Some(span) => InputError::at(file, source, span.start, message),
            None => InputError::new(file, message),
        }
    }
}

/// Serde's names of Rust's integer types in a message, in words: `expected
/// u64` is "expected a whole number from 0 to 18446744073709551615", and
/// an integer past 2^63 − 1 (which the TOML reader hands over `as i128`)
/// is said to be out of range.
fn in_words(message: &str) -> String {
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
    let Some((_, lo, hi)) = ranges.iter().find(|(name, ..)| *name == ty) else {
        return message.to_string();
    };
    let head = match head
        .strip_prefix("invalid type: integer ")
        .and_then(|h| h.strip_suffix(" as i128, "))
    {
        Some(n) => format!("integer {n} is out of range: "),
        None => head.to_string(),
    };
    format!("{head}expected a whole number from {lo} to {hi}")
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some((line, col)) = self.line {
            write!(f, ":{line}:{col}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

/// 1-based line and column of a byte offset.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Whether `err` is a problem with the user's input (somewhere in its
/// chain an [`InputError`]), not a failure of worldline or the machine.
pub fn is_input(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.downcast_ref::<InputError>().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "integer `99999999999999999999999` is out of range: expected a whole number from 0 to 18446744073709551615"
        );
        assert_eq!(
            in_words("invalid value: integer `-5`, expected u32"),
            "invalid value: integer `-5`, expected a whole number from 0 to 4294967295"
        );
        assert_eq!(in_words("missing field `task`"), "missing field `task`");
        assert_eq!(in_words("expected a string"), "expected a string");
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
