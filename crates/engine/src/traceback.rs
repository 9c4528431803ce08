//! The guest's own account of a fault, found in the stderr the host
//! captured: a Python traceback (componentize-py prints it, then traps), a
//! JavaScript exception with its stack (the JS SDK prints it, then traps)
//! or a Rust panic message. The run's error names it in one line; the run
//! report shows it in full. [`agent_error`] is the agent's own error as
//! every report shows it (`test`, `history`, `grade`, JUnit, `--json`).
//!
//! Why the account is derived from stderr when reports are made (was decision
//! 0022): a user debugging a trap wants the exception, not wasm frames, and
//! deriving it at read time from the stderr already in the footer needs no new
//! bundle field and works for old bundles; a `traceback` field written at run
//! time would be a format change that old bundles lack.
//!
//! Why the agent's own error is one value, `agent_error(footer)`, shown by
//! every report (was decision 0192): a case shows its first failed assertion,
//! and the agent's own words (why it gave up, what it threw) were only in the
//! bundle; one function keeps `test`, `history`, `grade`, JUnit, the `--json`
//! documents and the UI from disagreeing, and deriving it from the footer (not
//! storing it there) leaves recorded runs unchanged and shows a redacted view's
//! text.

use serde::{Deserialize, Serialize};
use worldline_log::log::{Footer, Status};

/// The agent's own error: the reason it gave when it returned `err`, or
/// what it died of (the exception or panic it wrote to stderr, else the
/// fault the host saw).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentError {
    /// The run's status (`errored`, `trapped`, `out_of_fuel`, ...).
    pub status: String,
    /// One line: the agent's reason, the exception (`KeyError: 'x'`), or
    /// the fault.
    pub message: String,
    /// Where an exception was raised: the innermost Python frame or the
    /// top of a JavaScript stack.
    pub at: Option<String>,
    /// The guest's account in full (traceback, stack, panic message).
    pub traceback: Option<String>,
    /// What to do about it, when the fault says (a Python module the build
    /// left out because the agent imported it only after it loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl AgentError {
    /// `agent errored: reason` and, indented below, where it was raised.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "agent {}: {}",
            self.status,
            worldline_case::shown::one_line(&self.message)
        )];
        if let Some(at) = &self.at {
            out.push(format!("  at {at}"));
        }
        if let Some(hint) = &self.hint {
            out.push(format!("  hint: {hint}"));
        }
        out
    }
}

/// What to do about a sandboxed Python agent's exception, when it is one
/// the build explains: `build-python` keeps the modules the agent has
/// imported once it has loaded, so one first imported inside `run` (by the
/// agent, or by the standard library lazily: `datetime.strptime` imports
/// `_strptime`, a codec its `encodings` module) is not there.
fn python_hint(exception: &str) -> Option<String> {
    let quoted = |s: &str| s.trim().trim_matches(['\'', '"']).to_string();
    let import = match (
        exception.strip_prefix("ModuleNotFoundError: No module named "),
        exception.strip_prefix("LookupError: unknown encoding: "),
    ) {
        (Some(module), _) => quoted(module),
        (None, Some(codec)) => format!("encodings.{}", quoted(codec)),
        _ => return None,
    };
    Some(format!(
        "a module first imported after the agent loaded is not in its build (build-python keeps what the agent has imported once it has loaded): add `import {import}` at the top of the agent's module"
    ))
}

/// The agent's own error in a run that did not complete (`None` when it
/// completed, stopped without a word, or stopped because the case's
/// scripted model had no reply, which is not the agent's error).
pub fn agent_error(f: &Footer) -> Option<AgentError> {
    if matches!(f.status, Status::Completed | Status::Unscripted) {
        return None;
    }
    let account = match f.status {
        Status::Trapped => find(&f.stderr),
        // A native process that died of an exception (`exited` with its
        // exit status; `errored` in runs recorded before native exits were
        // agent faults); an agent's own `err` reason is not one.
        Status::Errored | Status::Exited
            if f.error.as_deref().is_some_and(|e| e.starts_with(PROCESS)) =>
        {
            find_in_process(&f.stderr)
        }
        _ => None,
    };
    // A process whose stderr goes on after the exception (a logged,
    // handled one, then `sys.exit("why")`; or an SDK's noise at exit) may
    // not have died of it: both are said, as in the run's error (`at` is
    // still where the exception was raised).
    let after = match (&account, f.status) {
        (Some(a), Status::Errored | Status::Exited) => {
            process_last_line(&f.stderr).filter(|line| !a.text().ends_with(line))
        }
        _ => None,
    };
    let message = match (&account, after) {
        (Some(a), Some(line)) => format!(
            "its stderr ends: {line} (after an exception it printed: {})",
            a.exception()
        ),
        (Some(a), None) => a.exception(),
        (None, _) => f.error.clone()?,
    };
    let hint = match (&account, f.status) {
        (Some(a @ Account::Python(_)), Status::Trapped) => python_hint(&a.exception()),
        _ => None,
    };
    Some(AgentError {
        status: f.status.as_str().to_string(),
        message,
        at: account.as_ref().and_then(Account::location),
        traceback: account.map(|a| a.text().to_string()),
        hint,
    })
}

/// The last line of a process's stderr that is its own, trimmed (Node.js
/// signs off an uncaught error with its version: not a line of the
/// agent's).
fn process_last_line(stderr: &str) -> Option<&str> {
    (stderr.lines().rev())
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("Node.js v"))
}

/// How a guest described its fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Account {
    /// An uncaught Python exception: the traceback as Python printed it.
    Python(String),
    /// An uncaught JavaScript exception: `Name: message` and its stack.
    JavaScript(String),
    /// A Rust panic: the `panicked at` line and the message.
    Panic(String),
}

impl Account {
    /// The full text, as the guest wrote it.
    pub fn text(&self) -> &str {
        match self {
            Account::Python(t) | Account::JavaScript(t) | Account::Panic(t) => t,
        }
    }

    /// The exception itself (`KeyError: 'x'`, `TypeError: boom`), or the
    /// panic's message.
    pub fn exception(&self) -> String {
        match self {
            Account::Python(t) => match Group::of(t) {
                Some(g) => g.exception(),
                None => python_exception(t).to_string(),
            },
            Account::JavaScript(t) => t.lines().next().unwrap_or("").to_string(),
            Account::Panic(t) => {
                let mut lines = t.lines();
                let first = lines.next().unwrap_or("");
                let rest: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
                match rest.is_empty() {
                    true => first.to_string(),
                    false => format!("panic: {}", rest.join(" | ")),
                }
            }
        }
    }

    /// Where it was raised: the innermost `File "...", line N, in f` of a
    /// Python traceback, the first frame of a JavaScript stack, the
    /// `panicked at` place of a panic.
    pub fn location(&self) -> Option<String> {
        let t = self.text();
        match self {
            Account::Python(_) => match Group::of(t) {
                Some(g) => g.location(),
                None => {
                    let lines: Vec<&str> = t.lines().collect();
                    let (frames, _) = last_frames(&lines);
                    (frames.iter().rev())
                        .find(|l| l.trim_start().starts_with("File "))
                        .map(|l| l.trim().to_string())
                }
            },
            // Past the message's own lines, if it has more than one.
            Account::JavaScript(_) => (t.lines().skip(1))
                .find(|l| is_js_frame(l))
                .map(|l| l.trim().to_string()),
            Account::Panic(_) => t
                .lines()
                .next()
                .and_then(|l| l.split_once("panicked at "))
                .map(|(_, at)| at.trim_end_matches(':').to_string()),
        }
    }

    /// One line for the run's error message.
    pub fn summary(&self) -> String {
        match self {
            // The exception line (`KeyError: 'x'`) closes a traceback.
            Account::Python(_) => format!("uncaught Python exception {}", self.exception()),
            // The first line is the exception (`TypeError: boom`).
            Account::JavaScript(t) => format!(
                "uncaught JavaScript exception {}",
                t.lines().next().unwrap_or("")
            ),
            Account::Panic(t) => {
                let brief: String = t.chars().take(600).collect();
                format!("guest stderr: {}", brief.replace('\n', " | "))
            }
        }
    }
}

/// The last line that is not blank.
/// The exception line of a Python traceback: the first line after its
/// innermost frame (and that frame's indented source and carets), so a
/// message of several lines, or with a note (PEP 678), is said by its
/// first, `ValueError: boom`, not by its last (`second line`, the note),
/// which lost the exception's type.
///
/// The frames read are those of the last traceback of the text (the last
/// of a chain) up to its exception line: a message quoting another
/// traceback (a world service's, in a `Failed` the agent raised again)
/// had its quoted frames and exception taken for the agent's.
fn python_exception(text: &str) -> &str {
    let lines: Vec<&str> = text.lines().collect();
    let (_, exception) = last_frames(&lines);
    exception
        .map(|i| lines[i])
        .unwrap_or_else(|| last_line(text))
}

/// The frame lines of the last traceback of `lines` (from its header to
/// its exception line) and the index of its exception line: the first
/// line after the header that is not blank nor indented.
fn last_frames<'l>(lines: &'l [&'l str]) -> (&'l [&'l str], Option<usize>) {
    let start = lines
        .iter()
        .rposition(|l| l.starts_with(TRACEBACK))
        .unwrap_or(0);
    let exception = (start + 1..lines.len())
        .find(|&i| !lines[i].trim().is_empty() && !lines[i].starts_with([' ', '\t']));
    (&lines[start..exception.unwrap_or(lines.len())], exception)
}

/// A frame of a JavaScript stack: `name@file:line:column` (StarlingMonkey,
/// SpiderMonkey) or `at ...` (V8).
fn is_js_frame(line: &str) -> bool {
    let l = line.trim();
    let numbered = |l: &str| {
        let mut parts = l.rsplitn(3, ':');
        let (col, row) = (parts.next(), parts.next());
        [col, row]
            .iter()
            .all(|p| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    };
    l.starts_with("at ") || (l.contains('@') && numbered(l))
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

/// Longest text kept (the end of it: the exception is last).
const MAX_CHARS: usize = 8_000;

const TRACEBACK: &str = "Traceback (most recent call last):";
const CHAINS: &[&str] = &[
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
];
/// What componentize-py's runtime panics with after printing a traceback.
const PYTHON_PANIC: &str = "Python function threw an unexpected exception";
/// What the JS SDK prints before and after an uncaught exception
/// (`guest-sdk/js/runtime.ts`).
const JS_START: &str = "Uncaught JavaScript exception:";
const JS_END: &str = "(end of JavaScript exception)";
/// The hint Rust's panic handler adds, which says nothing about the fault.
const RUST_HINT: &str = "note: run with `RUST_BACKTRACE=1`";

/// How Python (3.11 and later) starts an exception group's traceback, in
/// the frame of `|` and `+` it draws around a group (`  + Exception Group
/// Traceback ...`, then `  | ` before each line): what an asyncio or anyio
/// task group raises, so what the official MCP client, LangGraph and other
/// async SDKs die of.
const GROUP_TRACEBACK: &str = "Exception Group Traceback (most recent call last):";

/// Whether `line` starts a traceback at the top level: a plain one, or an
/// exception group's (`  + Exception Group ...`; a group nested in one is
/// drawn inside its `|` frame, and is part of it).
fn starts_traceback(line: &str) -> bool {
    line.starts_with(TRACEBACK)
        || line
            .trim_start()
            .strip_prefix("+ ")
            .is_some_and(|l| l.starts_with(GROUP_TRACEBACK))
}

/// The last exception group of a Python traceback, when it ends on one.
struct Group<'a> {
    /// Its lines, from its header on.
    lines: Vec<&'a str>,
}

impl<'a> Group<'a> {
    /// The group `text` ends on, if its last traceback is a group's.
    fn of(text: &'a str) -> Option<Group<'a>> {
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.iter().rposition(|l| starts_traceback(l))?;
        (!lines[start].starts_with(TRACEBACK)).then(|| Group {
            lines: lines[start..].to_vec(),
        })
    }

    /// A line's text inside the group's frame (`| text`), or `None` for
    /// the frame's own lines (the header, `+-+---- 1 ----` separators).
    fn content(line: &str) -> Option<&str> {
        let t = line.trim_start().strip_prefix('|')?;
        Some(t.strip_prefix(' ').unwrap_or(t))
    }

    /// The indexes of the exception lines: unindented text that starts no
    /// traceback and is no chain's message.
    fn exceptions(&self) -> impl Iterator<Item = usize> + '_ {
        self.lines.iter().enumerate().filter_map(|(i, l)| {
            let c = Self::content(l)?;
            let exception = !c.is_empty()
                && !c.starts_with([' ', '\t'])
                && c != TRACEBACK
                && c != GROUP_TRACEBACK
                && !CHAINS.contains(&c.trim());
            exception.then_some(i)
        })
    }

    /// The exceptions the group holds that are not groups themselves, each
    /// the last of its block (the one a chain inside it ended on).
    fn leaves(&self) -> Vec<usize> {
        self.exceptions()
            .filter(|&i| {
                let c = Self::content(self.lines[i]).unwrap_or_default();
                let group = c.ends_with(" sub-exception)") || c.ends_with(" sub-exceptions)");
                let ends_block = self.lines[i + 1..]
                    .iter()
                    .find(|l| !l.trim().is_empty() && Self::content(l) != Some(""))
                    .is_none_or(|l| Self::content(l).is_none());
                !group && ends_block
            })
            .collect()
    }

    /// `ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception):
    /// ValueError: the real cause`: the group, then what it holds.
    fn exception(&self) -> String {
        let content = |i: usize| Self::content(self.lines[i]).unwrap_or_default().trim();
        let Some(group) = self.exceptions().next() else {
            return last_line(&self.lines.join("\n")).to_string();
        };
        let leaves: Vec<&str> = self.leaves().into_iter().map(content).collect();
        match leaves.is_empty() {
            true => content(group).to_string(),
            false => format!("{}: {}", content(group), leaves.join("; ")),
        }
    }

    /// The innermost frame above the first exception the group holds (the
    /// group's own, when that one has no traceback).
    fn location(&self) -> Option<String> {
        let first = self.leaves().first().copied().unwrap_or(self.lines.len());
        self.lines[..first]
            .iter()
            .rev()
            .filter_map(|l| Self::content(l))
            .find(|c| c.trim_start().starts_with("File "))
            .map(|c| c.trim().to_string())
    }
}

/// The last fault account in `stderr`: a Python traceback when the guest
/// ended on one, else the last Rust panic.
pub fn find(stderr: &str) -> Option<Account> {
    let lines: Vec<&str> = stderr.lines().collect();
    if let Some(start) = lines.iter().rposition(|l| *l == JS_START) {
        let end = lines[start..]
            .iter()
            .position(|l| *l == JS_END)
            .map_or(lines.len(), |e| start + e);
        return Some(Account::JavaScript(clip(&lines[start + 1..end])));
    }
    let panic = lines.iter().rposition(|l| l.contains("panicked at"));
    if let Some(start) = lines.iter().rposition(|l| starts_traceback(l)) {
        let python_ended_it = match panic {
            None => true,
            Some(p) => p > start && lines[p..].iter().any(|l| l.contains(PYTHON_PANIC)),
        };
        if python_ended_it {
            let end = panic.unwrap_or(lines.len());
            let start = chain_start(&lines, start);
            return Some(Account::Python(clip(&lines[start..end])));
        }
    }
    let p = panic?;
    // Up to the backtrace `RUST_BACKTRACE` prints after the message (its
    // first line was read as the message's last).
    let body: Vec<&str> = lines[p..]
        .iter()
        .copied()
        .take_while(|l| l.trim() != "stack backtrace:")
        .filter(|l| !l.starts_with(RUST_HINT))
        .collect();
    Some(Account::Panic(clip(&body)))
}

/// What a native process's stderr begins an error's summary with, after
/// `the process exited ...` (`native/exec.rs`): the marker
/// [`agent_error`] knows a process's own exception by.
pub const PROCESS: &str = "the process ";

/// The last uncaught exception in a native process's stderr, wherever it
/// is (an SDK may print more after it, such as a tracing warning): a
/// Python traceback (the block from `Traceback (most recent call last):`
/// to its exception line, with the tracebacks it was chained from) or a
/// Node.js error and its stack (`Error: message` and the `    at` lines
/// under it), whichever comes last.
pub fn find_in_process(stderr: &str) -> Option<Account> {
    let lines: Vec<&str> = stderr.lines().collect();
    let python = lines
        .iter()
        .rposition(|l| starts_traceback(l))
        .map(|start| {
            // Frames are indented; the exception's line is the first that
            // is not.
            let end = lines[start + 1..]
                .iter()
                .position(|l| !l.trim().is_empty() && !l.starts_with([' ', '\t']))
                .map_or(lines.len(), |i| start + 1 + i + 1);
            (start, chain_start(&lines, start), end)
        });
    let node = lines
        .windows(2)
        .rposition(|w| {
            !w[0].trim().is_empty()
                && !w[0].starts_with([' ', '\t'])
                && w[1].trim_start().starts_with("at ")
                && w[1].starts_with("    ")
        })
        .map(|start| {
            let end = lines[start + 1..]
                .iter()
                .position(|l| !l.trim_start().starts_with("at ") || !l.starts_with("    "))
                .map_or(lines.len(), |i| start + 1 + i);
            (start, end)
        });
    match (python, node) {
        (Some((at, from, end)), n) if n.is_none_or(|(s, _)| s < at) => {
            Some(Account::Python(clip(&lines[from..end])))
        }
        (_, Some((start, end))) => Some(Account::JavaScript(clip(&lines[start..end]))),
        _ => None,
    }
}

/// The error of a native process that ended badly (`how`: `the process
/// exited with status 1`): with the exception it died of when its stderr
/// has one, else with stderr's last line.
pub fn process_error(how: String, stderr: &str) -> String {
    debug_assert!(how.starts_with(PROCESS));
    match (find_in_process(stderr), process_last_line(stderr)) {
        // Lines after the exception (a logged, handled one, then
        // `sys.exit("why")`; or an SDK's noise at exit): both are said,
        // since which one ended the process does not show.
        (Some(account), Some(line)) if !account.text().ends_with(line) => format!(
            "{how}; its stderr ends: {line} (after an exception it printed: {})",
            account.summary().replacen("uncaught ", "", 1)
        ),
        (Some(account), _) => format!("{how}: {}", account.summary()),
        (None, Some(line)) => format!("{how}; its stderr ends: {line}"),
        (None, None) => how,
    }
}

/// The first traceback of the chain the one at `start` ends ("During
/// handling of the above exception ...").
fn chain_start(lines: &[&str], mut start: usize) -> usize {
    loop {
        let before = lines[..start].iter().rposition(|l| !l.trim().is_empty());
        match before {
            Some(i) if CHAINS.contains(&lines[i].trim()) => {
                match lines[..i].iter().rposition(|l| starts_traceback(l)) {
                    Some(earlier) => start = earlier,
                    None => return start,
                }
            }
            _ => return start,
        }
    }
}

/// The lines joined, trimmed, and cut in their middle to `MAX_CHARS`:
/// the start (a traceback's header, its outer frames and its exception's
/// type, a stack's first line) and the end (the innermost frames, where
/// it was raised). Cut to the end alone, a message past the limit left no
/// frame and no exception's type (`…xxxx…`).
fn clip(lines: &[&str]) -> String {
    let text = lines.join("\n");
    let text = text.trim();
    let n = text.chars().count();
    if n <= MAX_CHARS {
        return text.to_string();
    }
    let half = MAX_CHARS / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(n - half).collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PY: &str = "hello from the agent\n\
Traceback (most recent call last):\n  File \"/0/agent.py\", line 6, in run\n  File \"/0/agent.py\", line 3, in helper\nKeyError: 'nope'\n\n\
thread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\nPython function threw an unexpected exception\n\
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";

    #[test]
    fn finds_a_python_traceback() {
        let account = find(PY).unwrap();
        assert_eq!(
            account,
            Account::Python(
                "Traceback (most recent call last):\n  File \"/0/agent.py\", line 6, in run\n  File \"/0/agent.py\", line 3, in helper\nKeyError: 'nope'".into()
            )
        );
        assert_eq!(
            account.summary(),
            "uncaught Python exception KeyError: 'nope'"
        );
        assert_eq!(account.exception(), "KeyError: 'nope'");
        assert_eq!(
            account.location().as_deref(),
            Some("File \"/0/agent.py\", line 3, in helper")
        );
    }

    /// A message of several lines, or with a note, is said by the
    /// exception's own line: its last line (`second line`, the note) was
    /// taken, and the exception's type lost; a JavaScript message's second
    /// line was taken for the place it was thrown.
    #[test]
    fn an_exception_of_several_lines_is_said_by_its_first() {
        let py = Account::Python(
            "Traceback (most recent call last):\n  File \"/0/agent.py\", line 49, in run\n    raise ValueError(msg)\n    ^^^^^^^^^^^^^^^^^^^^^\nValueError: boom\nsecond line\nhint: check the config".into(),
        );
        assert_eq!(py.exception(), "ValueError: boom");
        assert_eq!(
            py.location().as_deref(),
            Some("File \"/0/agent.py\", line 49, in run")
        );
        let syntax = Account::Python(
            "  File \"/0/agent.py\", line 3\n    return (\n           ^\nSyntaxError: '(' was never closed".into(),
        );
        assert_eq!(syntax.exception(), "SyntaxError: '(' was never closed");
        let js = Account::JavaScript("TypeError: boom\nsecond line\nrun@agent.js:9:10".into());
        assert_eq!(js.exception(), "TypeError: boom");
        assert_eq!(js.location().as_deref(), Some("run@agent.js:9:10"));
        let v8 = Account::JavaScript("Error: x\n    at run (agent.js:3:9)".into());
        assert_eq!(v8.location().as_deref(), Some("at run (agent.js:3:9)"));
    }

    /// What an asyncio task group dies of (Python 3.11's output).
    const GROUP: &str = "  + Exception Group Traceback (most recent call last):
  |   File \"/tmp/eg.py\", line 8, in <module>
  |     asyncio.run(main())
  |   File \"/usr/lib/python3.11/asyncio/taskgroups.py\", line 145, in __aexit__
  |     raise me from None
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File \"/tmp/eg.py\", line 3, in task
    |     raise ValueError(\"the real cause\")
    | ValueError: the real cause
    +------------------------------------";

    /// An exception group is found as a traceback is, on both paths, and
    /// said by what it holds: its frame of `|` and `+` hid it, so a
    /// native agent's error was stderr's last line (`+-----`) and a
    /// component's the runtime's panic.
    #[test]
    fn an_exception_group_is_said_by_the_exceptions_it_holds() {
        let native = format!("INFO starting\n{GROUP}\n");
        let component = format!(
            "{GROUP}\nthread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\n{PYTHON_PANIC}\n"
        );
        for account in [find_in_process(&native).unwrap(), find(&component).unwrap()] {
            assert_eq!(account, Account::Python(GROUP.trim().into()));
            assert_eq!(
                account.exception(),
                "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception): ValueError: the real cause"
            );
            assert_eq!(
                account.location().as_deref(),
                Some("File \"/tmp/eg.py\", line 3, in task")
            );
        }
        assert_eq!(
            process_error("the process exited with status 1".into(), &native),
            "the process exited with status 1: uncaught Python exception ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception): ValueError: the real cause"
        );
        // Several, one a group of its own raised with a traceback, after a
        // chain: the leaves in order, the group's own frame when the first
        // has none.
        let nested = "Traceback (most recent call last):
  File \"<stdin>\", line 2, in <module>
KeyError: 'x'

During handling of the above exception, another exception occurred:

  + Exception Group Traceback (most recent call last):
  |   File \"<stdin>\", line 7, in outer
  | ExceptionGroup: outer (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | Exception Group Traceback (most recent call last):
    |   File \"<stdin>\", line 2, in inner
    | ExceptionGroup: inner (1 sub-exception)
    +-+---------------- 1 ----------------
      | TypeError: deep
      +------------------------------------
    +---------------- 2 ----------------
    | ValueError: v
    +------------------------------------
";
        let account = find_in_process(nested).unwrap();
        assert!(
            account.text().starts_with("Traceback"),
            "the chain is kept whole"
        );
        assert_eq!(
            account.exception(),
            "ExceptionGroup: outer (2 sub-exceptions): TypeError: deep; ValueError: v"
        );
        assert_eq!(
            account.location().as_deref(),
            Some("File \"<stdin>\", line 2, in inner")
        );
    }

    #[test]
    fn keeps_a_chained_traceback_whole() {
        let stderr = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\n\n\
During handling of the above exception, another exception occurred:\n\n\
Traceback (most recent call last):\n  File \"a.py\", line 3, in g\nValueError: y\n\
thread '<unnamed>' (1) panicked at runtime/src/lib.rs:1:1:\nPython function threw an unexpected exception\n";
        let text = find(stderr).unwrap().text().to_string();
        assert!(
            text.starts_with("Traceback") && text.contains("KeyError: 'x'"),
            "{text}"
        );
        assert!(text.ends_with("ValueError: y"), "{text}");
    }

    #[test]
    fn finds_a_rust_panic_without_the_hint() {
        let stderr = "working\nthread '<unnamed>' panicked at src/lib.rs:9:5:\nboom-42\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        let account = find(stderr).unwrap();
        assert_eq!(
            account,
            Account::Panic("thread '<unnamed>' panicked at src/lib.rs:9:5:\nboom-42".into())
        );
        assert_eq!(
            account.summary(),
            "guest stderr: thread '<unnamed>' panicked at src/lib.rs:9:5: | boom-42"
        );
        assert_eq!(account.exception(), "panic: boom-42");
        assert_eq!(account.location().as_deref(), Some("src/lib.rs:9:5"));
    }

    #[test]
    fn a_printed_traceback_followed_by_a_rust_panic_is_the_panic() {
        // With RUST_BACKTRACE set, the backtrace after the message is no
        // part of it.
        let traced = "thread '<unnamed>' panicked at src/lib.rs:9:5:\nboom-42\nstack backtrace:\n   0: std::panicking::begin\n";
        assert_eq!(
            find(traced),
            Some(Account::Panic(
                "thread '<unnamed>' panicked at src/lib.rs:9:5:\nboom-42".into()
            ))
        );
        let stderr = "Traceback (most recent call last):\nKeyError: 1\nthread 'x' panicked at a.rs:1:1:\nother\n";
        assert!(matches!(find(stderr), Some(Account::Panic(_))));
    }

    #[test]
    fn finds_a_javascript_exception_and_its_stack() {
        let stderr = "working\nUncaught JavaScript exception:\nTypeError: boom\ninner@agent.js:4:9\nrun@agent.js:9:10\n(end of JavaScript exception)\n\
expected a string, received [object]\nStack:\n  export_run@initializer.js:1:1\n";
        let account = find(stderr).unwrap();
        assert_eq!(
            account,
            Account::JavaScript("TypeError: boom\ninner@agent.js:4:9\nrun@agent.js:9:10".into())
        );
        assert_eq!(
            account.summary(),
            "uncaught JavaScript exception TypeError: boom"
        );
        assert_eq!(account.exception(), "TypeError: boom");
        assert_eq!(account.location().as_deref(), Some("inner@agent.js:4:9"));
    }

    #[test]
    fn finds_a_process_exception_above_later_noise() {
        let stderr = "starting\nTraceback (most recent call last):\n  File \"/a/agent.py\", line 9, in <module>\n    main()\n  File \"/a/agent.py\", line 5, in main\n    raise e\nopenai.InternalServerError: Error code: 500 - {'error': 'x'}\n[non-fatal] Tracing: server error 500, retrying.\nexporting traces\n";
        let account = find_in_process(stderr).unwrap();
        assert_eq!(
            account.exception(),
            "openai.InternalServerError: Error code: 500 - {'error': 'x'}"
        );
        assert_eq!(
            account.location().as_deref(),
            Some("File \"/a/agent.py\", line 5, in main")
        );
        assert!(!account.text().contains("Tracing"), "{}", account.text());
        let node = "/a/agent.mjs:5\n    throw new Error(\"boom\");\n    ^\n\nError: boom\n    at main (file:///a/agent.mjs:5:11)\n    at file:///a/agent.mjs:9:1\n\nNode.js v20.19.2\n";
        let account = find_in_process(node).unwrap();
        assert_eq!(account.exception(), "Error: boom");
        assert_eq!(
            account.location().as_deref(),
            Some("at main (file:///a/agent.mjs:5:11)")
        );
        assert_eq!(find_in_process("just a warning\n"), None);
    }

    /// The agent's error of a process that logged a handled exception,
    /// then gave up with `sys.exit("why")`, says both, as the run's error
    /// does: it said the handled exception alone, in `history`, `grade`,
    /// `test`'s second line, the UI and `--json`.
    /// A run's footer that ended `status` with `error` and `stderr`.
    fn ended(status: Status, error: Option<String>, stderr: &str) -> Footer {
        Footer {
            status,
            error,
            stderr: stderr.into(),
            backtrace: vec![],
            chain_hash: String::new(),
            events: 0,
            final_state_hash: String::new(),
            fuel: 0,
            grade: None,
            hash: String::new(),
            header_hash: None,
            output: None,
            replayable: true,
            stdout: String::new(),
            truncated: None,
            truncated_bytes: 0,
        }
    }

    /// A sandboxed Python agent that died of a module its build left out
    /// (imported inside `run`, or lazily by the standard library) is told
    /// to import it at the top (it was told nothing: `No module named
    /// '_strptime'` from a `datetime.strptime` call).
    #[test]
    fn a_module_the_build_left_out_is_hinted_at() {
        let trapped = |stderr: &str| ended(Status::Trapped, None, stderr);
        for (exception, import) in [
            (
                "ModuleNotFoundError: No module named '_strptime'",
                "import _strptime",
            ),
            (
                "LookupError: unknown encoding: cp1252",
                "import encodings.cp1252",
            ),
        ] {
            let stderr =
                format!("{TRACEBACK}\n  File \"/0/agent.py\", line 5, in run\n{exception}\n");
            let e = agent_error(&trapped(&stderr)).unwrap();
            let hint = e.hint.clone().unwrap_or_default();
            assert!(
                hint.contains(&format!("add `{import}` at the top")),
                "{hint}"
            );
            assert!(e.lines().last().unwrap().starts_with("  hint: "), "{e:?}");
        }
        let other = format!("{TRACEBACK}\n  File \"/0/agent.py\", line 5, in run\nKeyError: 'x'\n");
        assert_eq!(agent_error(&trapped(&other)).unwrap().hint, None);
    }

    #[test]
    fn the_agent_error_of_a_process_says_what_its_stderr_ends_with_too() {
        let stderr = "Traceback (most recent call last):\n  File \"/a/logged.py\", line 3, in <module>\n    raise KeyError(\"first\")\nKeyError: 'first'\ncleanup done\ngiving up: no model\n";
        let footer = |stderr: &str| {
            let error = process_error("the process exited with status 1".into(), stderr);
            ended(Status::Exited, Some(error), stderr)
        };
        let e = agent_error(&footer(stderr)).unwrap();
        assert_eq!(
            e.message,
            "its stderr ends: giving up: no model (after an exception it printed: KeyError: 'first')"
        );
        assert_eq!(
            e.at.as_deref(),
            Some("File \"/a/logged.py\", line 3, in <module>")
        );
        // Died of it: the exception alone.
        let died = "Traceback (most recent call last):\n  File \"/a/agent.py\", line 3, in <module>\nValueError: boom\n";
        assert_eq!(
            agent_error(&footer(died)).unwrap().message,
            "ValueError: boom"
        );
    }

    /// A handled exception the agent logged, then `sys.exit("why")`: the
    /// error says the last line too (it blamed the handled exception
    /// alone, and never showed why the agent gave up).
    #[test]
    fn a_process_error_says_what_its_stderr_ends_with_after_an_exception() {
        let handled = "ERROR:root:handled an error, continuing\nTraceback (most recent call last):\n  File \"/a/agent.py\", line 3, in <module>\nValueError: harmless retry, handled\ndoing more work\nfatal: the agent gave up because the budget ran out\n";
        assert_eq!(
            process_error("the process exited with status 1".into(), handled),
            "the process exited with status 1; its stderr ends: fatal: the agent gave up because the budget ran out (after an exception it printed: Python exception ValueError: harmless retry, handled)"
        );
        let node = "/a/agent.mjs:5\n    throw new Error(\"boom\");\n    ^\n\nError: boom\n    at main (file:///a/agent.mjs:5:11)\n\nNode.js v20.19.2\n";
        assert_eq!(
            process_error("the process exited with status 1".into(), node),
            "the process exited with status 1: uncaught JavaScript exception Error: boom"
        );
        let uncaught = "Traceback (most recent call last):\n  File \"/a/agent.py\", line 3, in <module>\nValueError: boom\n";
        assert_eq!(
            process_error("the process exited with status 1".into(), uncaught),
            "the process exited with status 1: uncaught Python exception ValueError: boom"
        );
    }

    #[test]
    fn nothing_to_find() {
        assert_eq!(find("just output\n"), None);
        assert_eq!(find(""), None);
    }

    #[test]
    fn long_tracebacks_keep_their_start_and_end() {
        let long = format!(
            "{TRACEBACK}\n{}\nValueError: end\n",
            "  frame\n".repeat(5_000)
        );
        let text = find(&long).unwrap().text().to_string();
        assert!(text.chars().count() <= MAX_CHARS + 1 && text.ends_with("ValueError: end"));
        assert!(text.starts_with(TRACEBACK), "{text}");
    }

    /// An exception whose message is past the limit is said by its type,
    /// and placed (its type and frames were cut off: `…xxxx…`).
    #[test]
    fn a_long_message_keeps_the_exception_s_type_and_place() {
        let long = format!(
            "{TRACEBACK}\n  File \"/0/agent.py\", line 14, in run\n    raise ValueError(\"bad payload: \" + \"x\" * 9000)\nValueError: bad payload: {}\n",
            "x".repeat(9_000)
        );
        let account = find(&long).unwrap();
        assert!(
            account
                .exception()
                .starts_with("ValueError: bad payload: xxx")
        );
        assert_eq!(
            account.location().as_deref(),
            Some("File \"/0/agent.py\", line 14, in run")
        );
    }

    /// A message that quotes another traceback (a world service's, in the
    /// `Failed` an agent raised again) is said by the agent's exception and
    /// frame: the quoted service's were taken.
    #[test]
    fn a_message_quoting_a_traceback_is_said_by_its_own_exception() {
        let text = format!(
            "{TRACEBACK}\n  File \"/0/agent.py\", line 12, in run\n    raise RuntimeError(f\"could not complete T-3: {{e}}\") from None\n\
             RuntimeError: could not complete T-3: `complete_task` raised {TRACEBACK}\n  File \"/0/tasks_service.py\", line 8, in helper\n    return task[\"no_such_field\"]\nKeyError: 'no_such_field'\n"
        );
        let account = find(&text).unwrap();
        assert!(
            account
                .exception()
                .starts_with("RuntimeError: could not complete T-3"),
            "{}",
            account.exception()
        );
        assert_eq!(
            account.location().as_deref(),
            Some("File \"/0/agent.py\", line 12, in run")
        );
    }
}
