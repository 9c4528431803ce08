//! The processes a build runs (componentize-py, pip, Node): each ends
//! with the build. It is killed when the thread that started it ends (the
//! process killed, `PR_SET_PDEATHSIG`), and when the build is asked to
//! stop (`stopped`: a signal its caller noted), after which the build
//! ends with [`Stopped`], its temporary folder removed as it unwinds. A
//! helper that ignored SIGINT ran on to its end, writing into a folder
//! no one removed.

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A build asked to stop before its helper ended.
#[derive(Debug)]
pub(crate) struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the build was stopped before it ended")
    }
}

impl std::error::Error for Stopped {}

/// Run `command` to its end and collect its output, as
/// [`Command::output`] does (its stdin empty), unless `stopped()` turns
/// true first: it is killed then, and the error is [`Stopped`].
pub(crate) fn output(command: &mut Command, stopped: &dyn Fn() -> bool) -> anyhow::Result<Output> {
    run(command, stopped, false)
}

/// [`output`] with `command`'s stderr the caller's own (its warnings
/// shown as they come), none collected.
pub(crate) fn output_showing_stderr(
    command: &mut Command,
    stopped: &dyn Fn() -> bool,
) -> anyhow::Result<Output> {
    run(command, stopped, true)
}

fn run(command: &mut Command, stopped: &dyn Fn() -> bool, shown: bool) -> anyhow::Result<Output> {
    // SAFETY: prctl(2) only, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let stderr = match shown {
        true => Stdio::inherit(),
        false => Stdio::piped(),
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()?;
    // What a helper says is kept up to a document's bound (its JSON
    // result, its errors); past it, read and dropped, so it never waits
    // on a full pipe.
    let drain = |from: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut from = from;
            let mut kept = Vec::new();
            let _ = (&mut from)
                .take(worldline_case::bounded::DOCUMENT)
                .read_to_end(&mut kept);
            let _ = std::io::copy(&mut from, &mut std::io::sink());
            kept
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = child.stderr.take().map(|e| drain(Box::new(e)));
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if stopped() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Stopped.into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.map_or_else(Vec::new, |e| e.join().unwrap_or_default()),
    })
}
