//! A table's rows file: a `.json` array or `.jsonl` lines, each row with
//! the line it starts on (for errors that name it); an integer no 64 bits
//! hold (`wide_integer`) and a field written twice in one object
//! (`one_field`) are refused where they are written, but in the world of a
//! run recorded before those rules, which replays as it ran (`new_rules`).

use super::one_field;
use crate::error::InputError;
use crate::new_rules;
use crate::wide_integer;
use serde_json::Value;
use std::path::Path;

/// The line on which each element of the top-level JSON array in `text`
/// starts (`text` has already parsed). serde_json reports no positions for
/// values that parse, so errors about a row (a duplicate key) count lines
/// here.
fn element_lines(text: &str) -> Vec<usize> {
    let (mut line, mut depth, mut expecting) = (1, 0usize, false);
    let mut out = Vec::new();
    for (_, b) in wide_integer::outside_strings(text) {
        if b == b'\n' {
            line += 1;
        }
        if b.is_ascii_whitespace() {
            continue;
        }
        if depth == 1 && expecting && b != b']' {
            out.push(line);
            expecting = false;
        }
        match b {
            b'[' | b'{' => {
                depth += 1;
                expecting = depth == 1;
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expecting = true,
            _ => {}
        }
    }
    out
}

/// Rows of a `.json` array or `.jsonl` file, each with its line number.
pub(crate) fn parse_rows(
    file: &Path,
    rel: &str,
    text: &str,
) -> Result<Vec<(usize, Value)>, InputError> {
    let bad = |line: usize, col: usize, m: String| InputError {
        line: Some((line, col)),
        ..InputError::new(file, m)
    };
    // serde_json's message without its own "at line L column C": the
    // error names its line and column once, as every other does.
    let syntax = |line: usize, e: serde_json::Error| {
        let said = e.to_string();
        let at = format!(" at line {} column {}", e.line(), e.column());
        bad(
            line,
            e.column(),
            said.strip_suffix(&at).unwrap_or(&said).to_string(),
        )
    };
    // A byte-order mark some editors write first is not a row's text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if rel.ends_with(".jsonl") {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v = one_field::from_str(line, new_rules::apply()).map_err(|e| syntax(i + 1, e))?;
            if let Some(wide) = wide_integer::find(line).filter(|_| new_rules::apply()) {
                return Err(bad(i + 1, wide.column, wide.message()));
            }
            if !v.is_object() {
                return Err(bad(i + 1, 1, "each line must be a JSON object".into()));
            }
            out.push((i + 1, v));
        }
        Ok(out)
    } else if rel.ends_with(".json") {
        let v = one_field::from_str(text, new_rules::apply()).map_err(|e| syntax(e.line(), e))?;
        if let Some(wide) = wide_integer::find(text).filter(|_| new_rules::apply()) {
            return Err(bad(wide.line, wide.column, wide.message()));
        }
        let Value::Array(rows) = v else {
            return Err(bad(1, 1, "expected a JSON array of rows".into()));
        };
        let lines = element_lines(text);
        // Each row is moved out of the array, not copied: a real-size
        // world's rows are megabytes, read by every process that loads it.
        rows.into_iter()
            .enumerate()
            .map(|(i, r)| {
                let line = lines.get(i).copied().unwrap_or(1);
                if r.is_object() {
                    Ok((line, r))
                } else {
                    Err(bad(line, 1, "every row must be a JSON object".into()))
                }
            })
            .collect()
    } else {
        Err(InputError::new(
            file,
            "rows must be a .json (array) or .jsonl file",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_names_its_line_once_and_a_byte_order_mark_is_skipped() {
        let err = |rel: &str, text: &str| {
            parse_rows(Path::new("t.jsonl"), rel, text)
                .unwrap_err()
                .to_string()
        };
        let lines = "{\"id\": \"a\"}\n\n\n{\"id\": \"b\", \"n\": NaN}\n";
        assert_eq!(err("t.jsonl", lines), "t.jsonl:4:18: expected value");
        let array = "[\n  {\"id\": \"a\"},\n  {\"id\": }\n]";
        assert_eq!(err("t.json", array), "t.jsonl:3:10: expected value");
        let bom = "\u{feff}{\"id\": \"a\"}\n{\"id\": \"b\"}\n";
        assert_eq!(
            parse_rows(Path::new("t.jsonl"), "t.jsonl", bom)
                .unwrap()
                .len(),
            2
        );
        let bom = "\u{feff}[{\"id\": \"a\"}]";
        assert_eq!(
            parse_rows(Path::new("t.json"), "t.json", bom)
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn each_row_of_a_json_array_knows_its_line() {
        let text = "[\n  {\"id\": \"a,[\\\"\"},\n\n  {\"id\": {\"x\": [1, 2]}}, 3,\n  \"s\"\n]";
        assert_eq!(element_lines(text), [2, 4, 4, 5]);
        assert_eq!(element_lines("[]"), Vec::<usize>::new());
    }
}
