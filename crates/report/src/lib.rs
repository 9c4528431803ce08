//! Reporters: how results are shown. Runners (`run`, `suite`, `fuzz`,
//! `replay`) return typed results; each reporter turns one of them into one
//! form: text for people, a JSON document (one `Serialize` type per
//! command, fields in alphabetical order so the output is canonical), or
//! JUnit XML for CI. Reporters never run anything. A text reporter writes
//! to the `impl Write` its caller hands it (the CLI: stdout, and stderr for
//! notes about the machine), never to the process's streams itself, so each
//! is snapshot-tested on what it writes (`reporter_tests.rs`).

#![deny(unreachable_pub)]

pub mod atif;
pub mod case;
pub mod check;
pub mod diff;
pub mod events;
pub mod fuzz;
pub mod gc;
pub mod grade;
pub mod group;
pub mod history;
pub mod import;
pub mod junit;
pub mod merge;
#[cfg(test)]
mod merge_properties;
pub mod otel;
#[cfg(test)]
mod reporter_tests;
pub mod repro;
pub mod rerun;
pub mod run;
pub mod runs;
pub mod suite;
pub mod timeline;
pub mod trajectory;
pub mod validate;
pub mod verify;

use serde::Serialize;
use std::io::Write;

/// Write a JSON document and a newline to `out`, its keys in sorted order
/// (through `serde_json::Value`, whose maps are sorted), whatever order
/// its type declares them in.
pub fn write_json(out: &mut impl Write, doc: &impl Serialize) -> anyhow::Result<()> {
    let value = serde_json::to_value(doc)?;
    writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    Ok(())
}

/// The most bytes of one value (an output, an error, a check's expected
/// or actual value, a line of a state diff) a text report shows; `--json`
/// and `history` hold it whole.
const SHOWN_AT_MOST: usize = 16 * 1024;

/// `text` as a text report shows it: whole, or its first
/// [`SHOWN_AT_MOST`] bytes (cut at a character's boundary) and how many
/// were left out (a 6 MB output was written to the terminal whole).
fn bounded(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= SHOWN_AT_MOST {
        return text.into();
    }
    let end = text.floor_char_boundary(SHOWN_AT_MOST);
    format!(
        "{}… ({} bytes more; `--json` holds it whole)",
        &text[..end],
        text.len() - end
    )
    .into()
}

/// `text` as one field of a report's line: [`bounded`], its line breaks
/// written `\n` ([`worldline_case::shown::one_line`]).
fn field(text: &str) -> String {
    worldline_case::shown::one_line(&bounded(text)).into_owned()
}

/// `value` pretty-printed as it reads `depth` spaces in: every line after
/// its first indented by them (a JSON string holds no raw line break), so
/// a document can be written a part at a time and read as if whole.
fn indented(value: &impl Serialize, depth: usize) -> std::io::Result<String> {
    let text = serde_json::to_string_pretty(value)?;
    Ok(text.replace('\n', &format!("\n{}", " ".repeat(depth))))
}
