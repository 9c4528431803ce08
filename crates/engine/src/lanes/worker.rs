//! A lane in another process (decision 0406): the process that shares
//! out the items (a fuzz campaign, `verify`) starts a worker (its own
//! command line again, with a hidden `--fuzz-worker N` or
//! `--verify-worker N`), writes it a first line saying what it works for
//! (the campaign's identity, the runs to verify) and then chunks of item
//! indexes, one JSON line each; the worker answers each item with a
//! [`Reply`] line (a chunk's answers in one write; after a signal, those
//! it did not run as not run) and ends at the end of its input. A worker
//! refuses a first line that is not for it (a fuzz campaign whose case,
//! world, agent or faults changed in between).
//!
//! [`Worker`] is the sharing side, a [`Remote`]; [`serve`] the worker's.
//! Lines are read to at most `bounded::WORKER_LINE`.

use super::{Answer, Remote};
use anyhow::{Context as _, Result, anyhow, bail};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read as _, Write};
use std::marker::PhantomData;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use worldline_case::bounded::WORKER_LINE;
use worldline_case::error::InputError;
use worldline_case::parallel::par_each;

/// What a worker answers for one item.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply<T> {
    Answer(T),
    /// The item was not run: a signal came first.
    NotRun(u64),
    /// The item could not be run; the worker ends.
    Error {
        message: String,
        /// The error was the user's input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Input>,
    },
}

/// An [`InputError`] as a worker passes it on, so the sharing process
/// exits as it would have (2, naming the file and line).
#[derive(Serialize, Deserialize)]
struct Input {
    file: std::path::PathBuf,
    line: Option<(usize, usize)>,
    message: String,
    /// The store's error ([`InputError::store`]): a database store's
    /// server gone stops a campaign, which reports what it made.
    #[serde(default)]
    store: bool,
}

impl<T: Answer> Reply<T> {
    /// The item's index and its answer (`None`: not run), or the error
    /// the worker met: an input error as the [`InputError`] it was, so the
    /// sharing process exits as it would have.
    fn into_answer(self) -> Result<(u64, Option<T>)> {
        match self {
            Reply::Answer(t) => Ok((t.index(), Some(t))),
            Reply::NotRun(index) => Ok((index, None)),
            Reply::Error {
                input:
                    Some(Input {
                        file,
                        line,
                        message,
                        store,
                    }),
                ..
            } => Err(InputError {
                file,
                line,
                message,
                store,
            }
            .into()),
            Reply::Error { message, .. } => Err(anyhow!(message)),
        }
    }
}

impl<T> Reply<T> {
    fn of(err: &anyhow::Error) -> Reply<T> {
        let input = err
            .chain()
            .find_map(|e| e.downcast_ref::<InputError>())
            .map(|e| Input {
                file: e.file.clone(),
                line: e.line,
                message: e.message.clone(),
                store: e.store,
            });
        Reply::Error {
            message: format!("{err:#}"),
            input,
        }
    }
}

/// Tell the process that started this worker why it cannot serve (its
/// setup failed, before [`serve`], which answers its own errors: the
/// store full as it kept the agent, a file changed):
/// `err` as the line that process reads for its first items, so that it
/// ends as it would have met the error itself. It said "a worker ended
/// before its runs were done", exit 4, and a campaign lost its report.
pub fn refuse(mut output: impl Write, err: &anyhow::Error) -> Result<()> {
    let mut line = serde_json::to_vec(&Reply::<()>::of(err))?;
    line.push(b'\n');
    output.write_all(&line)?;
    Ok(output.flush()?)
}

/// One line of at most `WORKER_LINE` bytes, without its newline; `None`
/// at the end of the input.
fn read_line(from: &mut impl BufRead) -> Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    from.take(WORKER_LINE).read_until(b'\n', &mut line)?;
    match line.pop() {
        None => Ok(None),
        Some(b'\n') => Ok(Some(line)),
        Some(_) if line.len() + 1 >= WORKER_LINE as usize => {
            bail!("a line between a process and its worker is longer than {WORKER_LINE} bytes")
        }
        Some(_) => bail!("a line between a process and its worker ended without a newline"),
    }
}

/// The sharing side of a worker process, whose answers are `T`s.
pub struct Worker<T> {
    child: Child,
    to: Option<ChildStdin>,
    /// The first line, written before the first chunk (from the thread
    /// that feeds the worker, which holds SIGPIPE).
    hello: Option<Vec<u8>>,
    from: BufReader<ChildStdout>,
    /// Whether it was sent the signal this process was.
    told: bool,
    jobs: usize,
    /// What it is a worker of (`fuzz`, `verify`), for errors.
    of: &'static str,
    answers: PhantomData<fn() -> T>,
}

impl<T> Worker<T> {
    /// Start `command` (this process's command line with its hidden
    /// `--…-worker JOBS`, a worker of `of`) with its stdin and stdout
    /// piped to this process; it is sent `hello` with its first chunk.
    pub fn start(
        mut command: Command,
        jobs: usize,
        of: &'static str,
        hello: &impl Serialize,
    ) -> Result<Worker<T>> {
        let mut hello = serde_json::to_vec(hello)?;
        hello.push(b'\n');
        // A worker ends with this process however it ends (SIGKILL
        // included: a closed pipe is read only between chunks), and a
        // native agent's processes under it with it (their keeper's own
        // parent-death signal). It is told with SIGTERM, as the command
        // was told: a native run under way in it is stopped and recorded
        // whole (`trapped`), as in the command's own lane, where SIGKILL
        // left it without a footer. Workers are started from the
        // command's main thread, which outlives them (the signal follows
        // a thread).
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: async-signal-safe calls only; nothing is allocated
        // between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt as _;
            command.pre_exec(move || {
                crate::native::signals::told_of_parent_death(parent, libc::SIGTERM)
            });
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start a {of} worker ({:?})", command.get_program()))?;
        let (to, from) = (child.stdin.take(), child.stdout.take());
        Ok(Worker {
            child,
            to,
            hello: Some(hello),
            from: BufReader::new(from.expect("piped stdout")),
            told: false,
            jobs,
            of,
            answers: PhantomData,
        })
    }

    /// Wait until the worker has written (or closed its output); once
    /// `halted` says so meanwhile, send it the signal this process was
    /// sent. One sent to this process alone (a CI runner's, a
    /// supervisor's) stopped none of the worker's runs, and the worker
    /// began those it held; a Ctrl-C reaches it too, and noted twice it is
    /// noted once.
    fn wait(&mut self, halted: &dyn Fn() -> bool) -> Result<()> {
        use std::os::fd::AsRawFd as _;
        while self.from.buffer().is_empty() && !self.told {
            if halted() {
                crate::native::signals::pass_on(self.child.id());
                self.told = true;
                break;
            }
            let mut fd = libc::pollfd {
                fd: self.from.get_ref().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one `pollfd` on the stack, of a pipe this owns.
            match unsafe { libc::poll(&mut fd, 1, 50) } {
                0 => {}
                n if n > 0 => break,
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        let (of, pid) = (self.of, self.child.id());
                        return Err(e).context(format!("waiting on a {of} worker (pid {pid})"));
                    }
                }
            }
        }
        Ok(())
    }

    fn write(&mut self, line: &[u8]) -> Result<()> {
        let to = self.to.as_mut().expect("stdin open until finish");
        // A worker that ended early closed its end: its reply says why.
        match to.write_all(line) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => Ok(other?),
        }
    }
}

impl<T: Answer> Remote<T> for Worker<T> {
    fn jobs(&self) -> usize {
        self.jobs
    }

    fn send(&mut self, indexes: &[u64]) -> Result<()> {
        if let Some(hello) = self.hello.take() {
            self.write(&hello)?;
        }
        let mut line = serde_json::to_vec(indexes)?;
        line.push(b'\n');
        self.write(&line)
    }

    fn recv(&mut self, halted: &dyn Fn() -> bool) -> Result<(u64, Option<T>)> {
        self.wait(halted)?;
        let Some(line) = read_line(&mut self.from)? else {
            let status = self.child.wait()?;
            bail!("{} ended before its runs were done ({status})", self.name());
        };
        serde_json::from_slice::<Reply<T>>(&line)
            .with_context(|| format!("{}'s answer is not one this process reads", self.name()))?
            .into_answer()
    }

    fn name(&self) -> String {
        format!("a {} worker (pid {})", self.of, self.child.id())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        drop(self.to.take());
        let status = self.child.wait()?;
        match status.success() {
            true => Ok(()),
            false => Err(anyhow!("{} failed ({status})", self.name())),
        }
    }
}

impl<T> Drop for Worker<T> {
    /// A worker left before `finish` (the process sharing the items
    /// failed) is stopped.
    fn drop(&mut self) {
        if self.to.take().is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Be a worker: read the first line of `input` as an `H` and `start` from
/// it the function that answers an item (`None`: not run, a signal came
/// first; an error, such as a first line that is not for this worker, is
/// answered and ends it), then answer the chunks of items that follow on
/// `jobs` threads, each on `output`. Ends at the end of `input`, or at the
/// first item that cannot be run (after answering it).
pub(crate) fn serve<H, T, F>(
    jobs: usize,
    start: impl FnOnce(H) -> Result<F>,
    input: impl BufRead + Send,
    output: impl Write + Send,
) -> Result<()>
where
    H: DeserializeOwned,
    T: Answer,
    F: Fn(u64) -> Result<Option<T>> + Sync,
{
    let input = Mutex::new(input);
    let output = Mutex::new(output);
    let answer = |replies: &[Reply<T>]| -> Result<()> {
        let mut bytes = Vec::new();
        for r in replies {
            serde_json::to_writer(&mut bytes, r)?;
            bytes.push(b'\n');
        }
        let mut out = output.lock().expect("output lock");
        out.write_all(&bytes)?;
        Ok(out.flush()?)
    };
    let hello: H = match read_line(&mut *input.lock().expect("input lock"))? {
        Some(line) => serde_json::from_slice(&line).context("a worker's first line")?,
        None => return Ok(()),
    };
    let item = match start(hello) {
        Ok(item) => item,
        Err(err) => {
            answer(&[Reply::of(&err)])?;
            return Err(err);
        }
    };
    // One `par_each` item a chunk (so CPU slots are handed over between
    // chunks); the end of the input ends every thread.
    let ran = par_each(usize::MAX, jobs, |_| {
        let Some(line) = read_line(&mut *input.lock().expect("input lock"))? else {
            bail!(End);
        };
        let chunk: Vec<u64> = serde_json::from_slice(&line).context("a worker's chunk")?;
        let mut replies = Vec::with_capacity(chunk.len());
        for i in chunk {
            match item(i) {
                Ok(Some(t)) => replies.push(Reply::Answer(t)),
                Ok(None) => replies.push(Reply::NotRun(i)),
                Err(e) => {
                    replies.push(Reply::of(&e));
                    answer(&replies)?;
                    return Err(e);
                }
            }
        }
        answer(&replies)
    });
    match ran {
        Err(e) if e.is::<End>() => Ok(()),
        other => other,
    }
}

/// The end of a worker's input, as the error that stops its threads.
#[derive(Debug)]
struct End;

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the end of the worker's input")
    }
}

impl std::error::Error for End {}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::error::is_input;

    #[derive(Debug, Serialize, Deserialize)]
    struct Done(u64);

    impl Answer for Done {
        fn index(&self) -> u64 {
            self.0
        }
    }

    /// The first line these tests' workers read.
    #[derive(Deserialize)]
    struct Hello {
        campaign: String,
    }

    /// A worker of campaign `c` on `jobs` threads, answering items with
    /// `item`.
    fn serve_c(
        jobs: usize,
        item: impl Fn(u64) -> Result<Option<Done>> + Sync,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let start = |h: Hello| match h.campaign == "c" {
            true => Ok(&item),
            false => Err(anyhow!("not campaign c")),
        };
        serve(jobs, start, input, out)
    }

    fn replies(out: &[u8]) -> Vec<Reply<Done>> {
        out.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    #[test]
    fn a_worker_answers_each_item_of_its_chunks_and_ends_with_its_input() {
        let input = b"{\"campaign\":\"c\"}\n[3,4]\n[9]\n";
        let mut out = Vec::new();
        serve_c(2, |i| Ok(Some(Done(i))), input, &mut out).unwrap();
        let mut got: Vec<u64> = replies(&out)
            .into_iter()
            .map(|r| r.into_answer().unwrap().0)
            .collect();
        got.sort();
        assert_eq!(got, [3, 4, 9]);
    }

    #[test]
    fn an_item_not_run_is_answered_so_and_the_worker_goes_on_to_the_end_of_its_input() {
        let input = b"{\"campaign\":\"c\"}\n[3,4]\n[9]\n";
        let mut out = Vec::new();
        serve_c(1, |i| Ok((i != 4).then_some(Done(i))), input, &mut out).unwrap();
        let got: Vec<(u64, Option<u64>)> = replies(&out)
            .into_iter()
            .map(|r| {
                let (i, t) = r.into_answer().unwrap();
                (i, t.map(|d| d.0))
            })
            .collect();
        assert_eq!(got, [(3, Some(3)), (4, None), (9, Some(9))]);
    }

    #[test]
    fn a_first_line_not_for_the_worker_is_answered_with_why_and_nothing_runs() {
        let input = b"{\"campaign\":\"another\"}\n[3,4]\n";
        let mut out = Vec::new();
        let err = serve_c(2, |_| unreachable!(), input, &mut out).unwrap_err();
        assert_eq!(err.to_string(), "not campaign c");
        let replies = replies(&out);
        assert_eq!(replies.len(), 1);
        let why = replies
            .into_iter()
            .next()
            .unwrap()
            .into_answer()
            .unwrap_err();
        assert_eq!(why.to_string(), "not campaign c");
    }

    #[test]
    fn an_input_error_reaches_the_sharing_process_with_its_file_and_line() {
        let input = b"{\"campaign\":\"c\"}\n[3,4,5]\n";
        let mut out = Vec::new();
        let failing = |i| match i {
            4 => Err(InputError::new("case.toml", "no such tool")
                .with_line(3)
                .into()),
            _ => Ok(Some(Done(i))),
        };
        assert!(serve_c(1, failing, input, &mut out).is_err());
        let mut answers = replies(&out).into_iter().map(Reply::into_answer);
        assert_eq!(answers.next().unwrap().unwrap().0, 3);
        let err = answers.next().unwrap().unwrap_err();
        assert!(is_input(&err));
        assert_eq!(err.to_string(), "case.toml:3:1: no such tool");
        assert!(answers.next().is_none(), "nothing after the error");
    }

    /// A worker whose setup failed (before it read a line) answers with
    /// the error, as the process that started it would have met it: that
    /// process read no line and said the worker "ended before its runs
    /// were done", an internal error.
    #[test]
    fn a_worker_that_cannot_start_answers_its_error() {
        let mut out = Vec::new();
        let full = InputError::new("store/leases", "cannot write into the store store");
        refuse(&mut out, &full.into()).unwrap();
        let mut answers = replies(&out).into_iter().map(Reply::into_answer);
        let err = answers.next().unwrap().unwrap_err();
        assert!(is_input(&err));
        assert_eq!(
            err.to_string(),
            "store/leases: cannot write into the store store"
        );
    }

    #[test]
    fn a_line_past_its_cap_or_without_its_end_is_an_error() {
        let long = vec![b'1'; WORKER_LINE as usize + 1];
        let err = read_line(&mut &long[..]).unwrap_err();
        assert!(err.to_string().contains("longer than"), "{err}");
        let err = read_line(&mut &b"[1,2"[..]).unwrap_err();
        assert!(err.to_string().contains("without a newline"), "{err}");
        assert_eq!(read_line(&mut &b""[..]).unwrap(), None);
    }
}
