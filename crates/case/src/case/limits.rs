//! `[limits]`: the resources one run may use, each checked against the
//! range worldline can honour (a zero timeout, a clock tick that would run
//! time past the year 9999, an output cap that would hold gigabytes in
//! memory), with the line and column of a value out of range; and the
//! step and tool-error limits benchmarks end their runs at (`max_steps`
//! over the kinds of call `steps` names, `max_errors`).
//!
//! Why Python agents get no limits of their own (was decision 0023):
//! componentize-py runs the interpreter's start-up at build time (it snapshots
//! it), so the Python example on an incident case uses 0.8–2.4 M fuel of the 2
//! G default and fits the default 128 MiB memory; no measurement called for
//! per-language defaults. The one trap is a lazy import: a standard-library
//! module first imported inside a function may be missing from the snapshot
//! (`datetime.strptime` needs `_strptime`), so guest-sdk/python/README.md says
//! to import at the top of the module.

use crate::error::InputError;
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

/// Resource limits of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Fuel budget (roughly, wasm instructions). Running out is a
    /// deterministic, replayable outcome.
    pub fuel: u64,
    /// Linear memory limit per memory, in MiB.
    pub memory_mb: u64,
    /// Wall-clock safety net in milliseconds (not replayable when hit).
    pub timeout_ms: u64,
    /// How much of stdout and of stderr is kept; past it further output is
    /// dropped and counted.
    pub stdout_bytes: usize,
    /// Most host calls a run may make.
    pub max_events: u64,
    /// Virtual time each host call takes, in microseconds.
    pub tick_us: u64,
    /// Most steps (the calls `steps` counts) a run may take; the next one
    /// ends it with status `step_limit`.
    pub max_steps: Option<u64>,
    /// Which calls are steps.
    pub steps: Steps,
    /// Most tool errors a run may get; the next one ends it with status
    /// `error_limit`.
    pub max_errors: Option<u64>,
}

/// Which calls count towards `max_steps`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Steps {
    /// Model calls (`model.complete`).
    Model,
    /// Tool calls (`tools.call`).
    Tools,
    /// Both (the default).
    #[default]
    Both,
}

impl Steps {
    pub fn as_str(self) -> &'static str {
        match self {
            Steps::Model => "model",
            Steps::Tools => "tools",
            Steps::Both => "both",
        }
    }
}

impl Limits {
    /// The limits a resume may raise, by the names its flags give them
    /// (`--max-steps` raises `max_steps`), and their values (`None`: no
    /// limit).
    pub fn raisable(&self) -> [(&'static str, Option<u64>); 5] {
        [
            ("fuel", Some(self.fuel)),
            ("max_steps", self.max_steps),
            ("max_events", Some(self.max_events)),
            ("max_errors", self.max_errors),
            ("timeout_ms", Some(self.timeout_ms)),
        ]
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 2_000_000_000,
            memory_mb: 128,
            timeout_ms: 30_000,
            stdout_bytes: 64 * 1024,
            max_events: 200_000,
            tick_us: 1_000,
            max_steps: None,
            steps: Steps::Both,
            max_errors: None,
        }
    }
}

/// `[limits]` as written: every key optional, each with its place.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsToml {
    fuel: Option<Spanned<Whole>>,
    memory_mb: Option<Spanned<Whole>>,
    timeout_ms: Option<Spanned<Whole>>,
    stdout_bytes: Option<Spanned<Whole>>,
    max_events: Option<Spanned<Whole>>,
    tick_us: Option<Spanned<Whole>>,
    max_steps: Option<Spanned<Whole>>,
    #[serde(default)]
    steps: Option<Steps>,
    max_errors: Option<Spanned<Whole>>,
}

/// A limit as written: a whole number, or the number written where one
/// must be (negative, or with a fraction), so that its refusal gives the
/// limit's own range (it was "from 0 to 18446744073709551615" for any).
#[derive(Debug)]
enum Whole {
    Of(u64),
    Not(String),
}

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Whole;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a whole number")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Whole, E> {
                Ok(Whole::Of(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Whole, E> {
                Ok(u64::try_from(v).map_or_else(|_| Whole::Not(v.to_string()), Whole::Of))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Whole, E> {
                Ok(Whole::Not(v.to_string()))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// The ranges each limit must be in (inclusive), and why.
const FUEL: (u64, u64) = (1, u64::MAX);
/// wasm32 addresses 4 GiB.
const MEMORY_MB: (u64, u64) = (1, 4096);
/// A day.
pub(crate) const TIMEOUT_MS: (u64, u64) = (1, 86_400_000);
/// Output is held in memory and written to the bundle: 16 MiB per stream.
pub const MAX_STDOUT_BYTES: u64 = 16 << 20;
/// Every event is held in memory until the footer.
const MAX_EVENTS: (u64, u64) = (1, 5_000_000);
/// A step or error limit is a count of events (at least one step).
const MAX_STEPS: (u64, u64) = (1, MAX_EVENTS.1);
/// An hour per call: at most events keep virtual time far inside 9999.
const TICK_US: (u64, u64) = (0, 3_600_000_000);

/// The most a case may give the limit `name` (as `resume` raises it):
/// `None` for a name that is no limit.
pub fn most(name: &str) -> Option<u64> {
    Some(match name {
        "fuel" => FUEL.1,
        "memory_mb" => MEMORY_MB.1,
        "timeout_ms" => TIMEOUT_MS.1,
        "max_events" => MAX_EVENTS.1,
        "max_steps" | "max_errors" => MAX_STEPS.1,
        _ => return None,
    })
}

impl LimitsToml {
    /// The limits, defaults filled in, each checked against its range.
    pub fn check(&self, path: &Path, source: &str) -> Result<Limits, InputError> {
        let d = Limits::default();
        let pick = |v: &Option<Spanned<Whole>>,
                    name: &str,
                    default: u64,
                    (lo, hi): (u64, u64)|
         -> Result<u64, InputError> {
            let written = match v.as_ref().map(Spanned::get_ref) {
                None => return Ok(default),
                Some(Whole::Of(n)) if (lo..=hi).contains(n) => return Ok(*n),
                Some(Whole::Of(n)) => n.to_string(),
                Some(Whole::Not(text)) => text.clone(),
            };
            let at = v.as_ref().map_or(0, |s| s.span().start);
            Err(InputError::at(
                path,
                source,
                at,
                format!(
                    "[limits] {name} = {written} is out of range; it must be a whole number between {lo} and {hi}"
                ),
            ))
        };
        Ok(Limits {
            fuel: pick(&self.fuel, "fuel", d.fuel, FUEL)?,
            memory_mb: pick(&self.memory_mb, "memory_mb", d.memory_mb, MEMORY_MB)?,
            timeout_ms: pick(&self.timeout_ms, "timeout_ms", d.timeout_ms, TIMEOUT_MS)?,
            stdout_bytes: pick(
                &self.stdout_bytes,
                "stdout_bytes",
                d.stdout_bytes as u64,
                (0, MAX_STDOUT_BYTES),
            )? as usize,
            max_events: pick(&self.max_events, "max_events", d.max_events, MAX_EVENTS)?,
            tick_us: pick(&self.tick_us, "tick_us", d.tick_us, TICK_US)?,
            max_steps: self
                .max_steps
                .as_ref()
                .map(|_| pick(&self.max_steps, "max_steps", 0, MAX_STEPS))
                .transpose()?,
            steps: self.steps.unwrap_or_default(),
            max_errors: self
                .max_errors
                .as_ref()
                .map(|_| pick(&self.max_errors, "max_errors", 0, (0, MAX_STEPS.1)))
                .transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<Limits, InputError> {
        let doc: LimitsToml = toml::from_str(text).unwrap();
        doc.check(Path::new("c.toml"), text)
    }

    #[test]
    fn out_of_range_values_are_refused_at_their_place() {
        for (text, name) in [
            ("fuel = 0", "fuel"),
            ("memory_mb = 0", "memory_mb"),
            ("timeout_ms = 0", "timeout_ms"),
            ("stdout_bytes = 2_000_000_000", "stdout_bytes"),
            ("tick_us = 9223372036854775807", "tick_us"),
            ("max_events = 0", "max_events"),
            ("max_steps = 0", "max_steps"),
            ("max_errors = 5_000_001", "max_errors"),
        ] {
            let e = check(text).unwrap_err();
            assert!(e.message.contains(name), "{e}");
            assert!(e.line.is_some(), "{e}");
        }
        let e = check("\ntimeout_ms = 0").unwrap_err();
        assert_eq!(e.line, Some((2, 14)), "{e}");
        // A negative or fractional number is refused with the limit's own
        // range (it was "a whole number from 0 to 18446744073709551615").
        for (text, said) in [
            (
                "tick_us = -1",
                "tick_us = -1 is out of range; it must be a whole number between 0 and 3600000000",
            ),
            (
                "timeout_ms = 1e9",
                "timeout_ms = 1000000000 is out of range; it must be a whole number between 1 and 86400000",
            ),
            (
                "memory_mb = 1.5",
                "memory_mb = 1.5 is out of range; it must be a whole number between 1 and 4096",
            ),
        ] {
            let e = check(text).unwrap_err();
            assert_eq!(e.message, format!("[limits] {said}"));
            assert!(e.line.is_some(), "{e}");
        }
        assert!(toml::from_str::<LimitsToml>("fuel = \"5\"").is_err());
    }

    #[test]
    fn absent_values_are_the_defaults() {
        assert_eq!(check("").unwrap(), Limits::default());
        assert_eq!(check("fuel = 5").unwrap().fuel, 5);
    }
}
