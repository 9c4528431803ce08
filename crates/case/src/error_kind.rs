//! Why a host call failed: the vocabulary of the WIT `error-kind` enum
//! (wit/agent.wit), spelled once for the whole host. Records, case files
//! and the guest all name the kinds the same way (`not-found`, ...).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One error kind, in the order the WIT declares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// A permission of the case or world refused the call; nothing changed.
    Denied,
    /// The named tool, row or file does not exist.
    NotFound,
    /// The arguments did not match the tool's parameter schema.
    InvalidArgs,
    /// The call took longer than the world allows.
    Timeout,
    /// The service behind the call is down.
    Unavailable,
    /// The call conflicts with the current state (for example a duplicate).
    Conflict,
    /// Any other failure.
    Failed,
}

impl ErrorKind {
    /// Every kind, in declared order.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::Denied,
        ErrorKind::NotFound,
        ErrorKind::InvalidArgs,
        ErrorKind::Timeout,
        ErrorKind::Unavailable,
        ErrorKind::Conflict,
        ErrorKind::Failed,
    ];

    /// The kind's name (`not-found`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Denied => "denied",
            ErrorKind::NotFound => "not-found",
            ErrorKind::InvalidArgs => "invalid-args",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Failed => "failed",
        }
    }

    /// The kind a recorded or already checked name stands for; a name that
    /// is no kind reads as `failed`, as the guest would see it.
    pub fn named(name: &str) -> ErrorKind {
        name.parse().unwrap_or(ErrorKind::Failed)
    }

    /// What the agent is told when nothing more specific is known.
    pub fn default_message(self) -> &'static str {
        match self {
            ErrorKind::Denied => "permission denied",
            ErrorKind::NotFound => "not found",
            ErrorKind::InvalidArgs => "invalid arguments",
            ErrorKind::Timeout => "the call timed out",
            ErrorKind::Unavailable => "the service is unavailable",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Failed => "the call failed",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no error kind. Its text completes a sentence that starts
/// with the name as written: "`x` is not an error kind; use one of ...".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownErrorKind;

impl fmt::Display for UnknownErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        write!(f, "is not an error kind; use one of {}", names.join(", "))
    }
}

impl std::error::Error for UnknownErrorKind {}

impl FromStr for ErrorKind {
    type Err = UnknownErrorKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or(UnknownErrorKind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The case names of `enum error-kind { ... }` in the WIT file.
    fn wit_cases(wit: &str) -> Vec<String> {
        let start = wit
            .find("enum error-kind {")
            .expect("wit/agent.wit declares `enum error-kind`");
        let body = &wit[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
        body.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .map(|l| l.trim_end_matches(',').to_string())
            .collect()
    }

    #[test]
    fn the_names_are_the_wit_enum_cases_in_order() {
        let wit = include_str!("../../../wit/agent.wit");
        let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(wit_cases(wit), names);
        // `ALL` lists every variant: each sits at its own discriminant, and
        // the last one closes the list.
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
        assert_eq!(ErrorKind::ALL.len(), ErrorKind::Failed as usize + 1);
    }

    /// The names `ErrorKind::X => "name"` of the SDK's `as_str`.
    fn rust_sdk_names(src: &str) -> Vec<String> {
        let from = src.find("pub fn as_str(self)").expect("the SDK has as_str");
        src[from..]
            .lines()
            .skip(2) // the signature and `match self {`
            .take_while(|l| l.trim() != "}")
            .filter_map(|l| l.split('"').nth(1).map(String::from))
            .collect()
    }

    /// The values `NAME = "name"` of the Python SDK's `class ErrorKind`.
    fn python_sdk_names(src: &str) -> Vec<String> {
        let from = src.find("class ErrorKind(").expect("the SDK has ErrorKind");
        src[from..]
            .lines()
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with(' '))
            .filter_map(|l| l.trim().split_once(" = "))
            .map(|(_, v)| v.trim_matches('"').to_string())
            .collect()
    }

    #[test]
    fn the_guest_sdks_spell_the_same_names() {
        let wit = wit_cases(include_str!("../../../wit/agent.wit"));
        let rust = include_str!("../../../guest-sdk/src/lib.rs");
        assert_eq!(rust_sdk_names(rust), wit, "guest-sdk/src/lib.rs as_str");
        let python = include_str!("../../../guest-sdk/python/worldline_guest/errors.py");
        assert_eq!(
            python_sdk_names(python),
            wit,
            "guest-sdk/python/worldline_guest/errors.py ErrorKind"
        );
    }

    #[test]
    fn names_round_trip_through_text_and_serde() {
        for k in ErrorKind::ALL {
            assert_eq!(k.as_str().parse::<ErrorKind>(), Ok(k));
            assert_eq!(k.to_string(), k.as_str());
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
            assert_eq!(
                serde_json::from_value::<ErrorKind>(k.as_str().into()).unwrap(),
                k
            );
        }
        assert_eq!(ErrorKind::named("not-found"), ErrorKind::NotFound);
        assert_eq!(ErrorKind::named("tiemout"), ErrorKind::Failed);
    }

    #[test]
    fn an_unknown_name_lists_the_kinds() {
        let err = "boom".parse::<ErrorKind>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "is not an error kind; use one of denied, not-found, invalid-args, timeout, unavailable, conflict, failed"
        );
    }
}
