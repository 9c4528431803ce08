//! A TOML document's size in tokens, checked before it is parsed. The
//! `toml` reader holds what it parses as a tree of 100–300 bytes a token,
//! so a document well under its byte cap ([`crate::bounded::DOCUMENT`])
//! could fill the memory before it failed; counting its tokens with
//! `toml_parser`'s lexer allocates nothing. Whitespace, comments and
//! newlines are not counted: they make no value.

use std::path::Path;

use toml_parser::lexer::TokenKind;

use crate::bounded::TOML_TOKENS;
use crate::error::InputError;

/// `text`, the TOML file `file`, refused at the token past
/// [`TOML_TOKENS`] (its line and column named). A case a run recorded is
/// read whatever its size (decision 0412).
pub fn check(file: &Path, text: &str) -> Result<(), InputError> {
    if !crate::new_rules::apply() {
        return Ok(());
    }
    let past = toml_parser::Source::new(text)
        .lex()
        .filter(|t| {
            !matches!(
                t.kind(),
                TokenKind::Whitespace | TokenKind::Comment | TokenKind::Newline | TokenKind::Eof
            )
        })
        .nth(TOML_TOKENS);
    match past {
        None => Ok(()),
        Some(token) => Err(InputError::at(
            file,
            text,
            token.span().start(),
            format!(
                "holds more than {TOML_TOKENS} TOML tokens (keys, values and punctuation), far more than a case or a project file needs: move large data into the world's files (its rows), which are not read as TOML"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_past_the_limit_is_refused_at_its_token() {
        let file = Path::new("big.toml");
        // `x = [` is three tokens, each `1,` two: the closing `]` is the
        // last one allowed.
        let n = (TOML_TOKENS - 4) / 2;
        let under = format!("x = [{}]\n", "1,".repeat(n));
        check(file, &under).unwrap();
        toml::from_str::<toml::Table>(&under).unwrap();
        let over = format!("# big\nx = [{}1]\n", "1,".repeat(n));
        let e = check(file, &over).unwrap_err();
        assert_eq!(e.line, Some((2, 7 + 2 * n)));
        assert!(e.message.contains("move large data into the world's files"));
        // Whitespace and comments do not count.
        let spaced = format!("x = [{}]\n", "1,   # one\n".repeat(n));
        check(file, &spaced).unwrap();
    }
}
