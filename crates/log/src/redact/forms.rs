//! The forms a value takes when JSON text quotes it: as it is, escaped as
//! a JSON string holds it, with what is not ASCII written `\uXXXX` (the
//! default of Python's `json.dumps`, in either case of hex), and with `/`
//! written `\/` (PHP's): what looked for the value alone (a hidden value
//! in a model message, an API key echoed by an upstream) missed the rest.

use std::fmt::Write as _;

/// Every form of `text`, each once, `text` itself first.
pub fn json_forms(text: &str) -> Vec<String> {
    let quoted = serde_json::to_string(text).expect("a string serializes");
    let escaped = &quoted[1..quoted.len() - 1];
    let ascii = |upper: bool| {
        let mut out = String::with_capacity(escaped.len());
        for c in escaped.chars() {
            if c.is_ascii() {
                out.push(c);
                continue;
            }
            for unit in c.encode_utf16(&mut [0u16; 2]) {
                let _ = match upper {
                    true => write!(out, "\\u{unit:04X}"),
                    false => write!(out, "\\u{unit:04x}"),
                };
            }
        }
        out
    };
    let mut forms = vec![
        text.to_string(),
        escaped.to_string(),
        ascii(false),
        ascii(true),
    ];
    let slashed: Vec<String> = (forms.iter())
        .filter(|f| f.contains('/'))
        .map(|f| f.replace('/', "\\/"))
        .collect();
    forms.extend(slashed);
    let mut once: Vec<String> = Vec::with_capacity(forms.len());
    for f in forms {
        if !once.contains(&f) {
            once.push(f);
        }
    }
    once
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_s_forms_in_json_text() {
        assert_eq!(json_forms("plain"), ["plain"]);
        assert_eq!(
            json_forms("Grüße \"q\\z"),
            [
                "Grüße \"q\\z",
                "Grüße \\\"q\\\\z",
                "Gr\\u00fc\\u00dfe \\\"q\\\\z",
                "Gr\\u00FC\\u00DFe \\\"q\\\\z",
            ]
        );
        assert_eq!(json_forms("a/b"), ["a/b", "a\\/b"]);
        // Past the basic plane: a surrogate pair, as JSON writes it.
        assert!(json_forms("x😀").contains(&"x\\ud83d\\ude00".to_string()));
    }
}
