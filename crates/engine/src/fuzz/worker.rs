//! A campaign's lane in another process (decision 0406): the campaign
//! starts a worker (`worldline fuzz … --fuzz-worker N`, the same command
//! line), writes it the campaign's identity and then chunks of variation
//! indexes, one JSON line each; the worker answers each variation with a
//! [`Reply`] line (a chunk's answers in one write) and ends at the end of
//! its input. A worker whose case, world, agent or faults differ from the
//! campaign's (a file changed in between) refuses to run.
//!
//! [`Worker`] is the campaign's side, a [`Remote`]; [`serve`] the
//! worker's (`Campaign::serve` calls it with the campaign's trials). Lines
//! are read to at most `bounded::WORKER_LINE`.

use super::lanes::Remote;
use super::trial::Trial;
use anyhow::{Context as _, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read as _, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use worldline_case::bounded::WORKER_LINE;
use worldline_case::error::InputError;
use worldline_case::parallel::par_each;

/// What a worker answers for one variation.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    Trial(Trial),
    /// The variation could not be run; the worker ends.
    Error {
        message: String,
        /// The error was the user's input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Input>,
    },
}

/// An [`InputError`] as a worker passes it on, so the campaign exits as
/// it would have (2, naming the file and line).
#[derive(Serialize, Deserialize)]
struct Input {
    file: std::path::PathBuf,
    line: Option<(usize, usize)>,
    message: String,
}

impl Reply {
    /// The trial, or the error the worker met: an input error as the
    /// [`InputError`] it was, so the campaign exits as it would have.
    fn into_trial(self) -> Result<Trial> {
        match self {
            Reply::Trial(t) => Ok(t),
            Reply::Error {
                input:
                    Some(Input {
                        file,
                        line,
                        message,
                    }),
                ..
            } => Err(InputError {
                file,
                line,
                message,
            }
            .into()),
            Reply::Error { message, .. } => Err(anyhow!(message)),
        }
    }

    fn of(err: &anyhow::Error) -> Reply {
        let input = err
            .chain()
            .find_map(|e| e.downcast_ref::<InputError>())
            .map(|e| Input {
                file: e.file.clone(),
                line: e.line,
                message: e.message.clone(),
            });
        Reply::Error {
            message: format!("{err:#}"),
            input,
        }
    }
}

/// The first line a campaign writes its worker.
#[derive(Serialize, Deserialize)]
struct Hello {
    campaign: String,
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
            bail!(
                "a line between a fuzz campaign and its worker is longer than {WORKER_LINE} bytes"
            )
        }
        Some(_) => bail!("a fuzz campaign's worker line ended without a newline"),
    }
}

/// The campaign's side of a worker process.
pub struct Worker {
    child: Child,
    to: Option<ChildStdin>,
    /// The identity line, written before the first chunk (from the thread
    /// that feeds the worker, which holds SIGPIPE).
    hello: Option<Hello>,
    from: BufReader<ChildStdout>,
    jobs: usize,
}

impl Worker {
    /// Start `command` (a `worldline fuzz … --fuzz-worker JOBS` of the
    /// campaign whose `Campaign::identity` is `campaign`) with its stdin
    /// and stdout piped to this process; it is told which campaign it
    /// works for with its first chunk.
    pub fn start(mut command: Command, jobs: usize, campaign: String) -> Result<Worker> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start a fuzz worker ({:?})", command.get_program()))?;
        let (to, from) = (child.stdin.take(), child.stdout.take());
        Ok(Worker {
            child,
            to,
            hello: Some(Hello { campaign }),
            from: BufReader::new(from.expect("piped stdout")),
            jobs,
        })
    }

    fn line(&mut self, value: &impl Serialize) -> Result<()> {
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        let to = self.to.as_mut().expect("stdin open until finish");
        // A worker that ended early closed its end: its reply says why.
        match to.write_all(&line) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => Ok(other?),
        }
    }
}

impl Remote for Worker {
    fn jobs(&self) -> usize {
        self.jobs
    }

    fn send(&mut self, indexes: &[u64]) -> Result<()> {
        if let Some(hello) = self.hello.take() {
            self.line(&hello)?;
        }
        self.line(&indexes)
    }

    fn recv(&mut self) -> Result<Trial> {
        let Some(line) = read_line(&mut self.from)? else {
            let status = self.child.wait()?;
            bail!(
                "a fuzz worker (pid {}) ended before its runs were done ({status})",
                self.child.id()
            );
        };
        serde_json::from_slice::<Reply>(&line)
            .context("a fuzz worker's answer is not one this campaign reads")?
            .into_trial()
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        drop(self.to.take());
        let status = self.child.wait()?;
        match status.success() {
            true => Ok(()),
            false => Err(anyhow!(
                "a fuzz worker (pid {}) failed ({status})",
                self.child.id()
            )),
        }
    }
}

impl Drop for Worker {
    /// A worker left before `finish` (its campaign failed) is stopped.
    fn drop(&mut self) {
        if self.to.take().is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Be the worker of the campaign whose identity is `campaign`: check the
/// identity on `input`'s first line, then run the chunks of variations
/// that follow with `trial` on `jobs` threads, answering each on `output`.
/// Ends at the end of `input`, or at the first variation that cannot be
/// run (after answering it).
pub(crate) fn serve(
    campaign: &str,
    jobs: usize,
    trial: &(dyn Fn(u64) -> Result<Trial> + Sync),
    input: impl BufRead + Send,
    output: impl Write + Send,
) -> Result<()> {
    let input = Mutex::new(input);
    let output = Mutex::new(output);
    let answer = |replies: &[Reply]| -> Result<()> {
        let mut bytes = Vec::new();
        for r in replies {
            serde_json::to_writer(&mut bytes, r)?;
            bytes.push(b'\n');
        }
        let mut out = output.lock().expect("output lock");
        out.write_all(&bytes)?;
        Ok(out.flush()?)
    };
    let hello: Hello = match read_line(&mut *input.lock().expect("input lock"))? {
        Some(line) => serde_json::from_slice(&line).context("a fuzz worker's first line")?,
        None => return Ok(()),
    };
    if hello.campaign != campaign {
        let err = anyhow!(
            "this fuzz worker's case, world, agent or faults differ from its campaign's (a file changed since the campaign started): run the campaign again"
        );
        answer(&[Reply::of(&err)])?;
        return Err(err);
    }
    // One item a chunk (so CPU slots are handed over between chunks); the
    // end of the input ends every thread.
    let ran = par_each(usize::MAX, jobs, |_| {
        let Some(line) = read_line(&mut *input.lock().expect("input lock"))? else {
            bail!(End);
        };
        let chunk: Vec<u64> = serde_json::from_slice(&line).context("a fuzz worker's chunk")?;
        let mut replies = Vec::with_capacity(chunk.len());
        for i in chunk {
            match trial(i) {
                Ok(t) => replies.push(Reply::Trial(t)),
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
        f.write_str("the end of the campaign's input")
    }
}

impl std::error::Error for End {}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::case::fuzz::Schedule;
    use worldline_case::error::is_input;

    fn trial(index: u64) -> Trial {
        Trial {
            index,
            seed: index + 1,
            model_seed: None,
            signature: None,
            faults: Schedule::default(),
            injected: false,
            attacked: false,
        }
    }

    fn replies(out: &[u8]) -> Vec<Reply> {
        out.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    #[test]
    fn a_worker_answers_each_variation_of_its_chunks_and_ends_with_its_input() {
        let input = b"{\"campaign\":\"c\"}\n[3,4]\n[9]\n";
        let mut out = Vec::new();
        serve("c", 2, &|i| Ok(trial(i)), &input[..], &mut out).unwrap();
        let mut got: Vec<u64> = replies(&out)
            .into_iter()
            .map(|r| r.into_trial().unwrap().index)
            .collect();
        got.sort();
        assert_eq!(got, [3, 4, 9]);
    }

    #[test]
    fn an_input_error_reaches_the_campaign_with_its_file_and_line() {
        let input = b"{\"campaign\":\"c\"}\n[3,4,5]\n";
        let mut out = Vec::new();
        let failing = |i| match i {
            4 => Err(InputError::new("case.toml", "no such tool")
                .with_line(3)
                .into()),
            _ => Ok(trial(i)),
        };
        assert!(serve("c", 1, &failing, &input[..], &mut out).is_err());
        let mut answers = replies(&out).into_iter().map(Reply::into_trial);
        assert_eq!(answers.next().unwrap().unwrap().index, 3);
        let err = answers.next().unwrap().unwrap_err();
        assert!(is_input(&err));
        assert_eq!(err.to_string(), "case.toml:3:1: no such tool");
        assert!(answers.next().is_none(), "nothing after the error");
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
