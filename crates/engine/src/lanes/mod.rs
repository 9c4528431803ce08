//! Items of a list shared out among lanes: this process's threads, and
//! other processes ([`Remote`], a [`worker::Worker`]): a fuzz campaign's
//! variations, `verify`'s runs. Two jobs in one process share one address
//! space, so every `mprotect` wasmtime makes to reset a pooled slot (two
//! a run) flushes the other core's TLB as well; a job in a process of its
//! own flushes only its own (decision 0406).
//!
//! Every lane takes items from one queue. A remote takes them in chunks
//! (a few milliseconds of its work, fewer as the queue empties, so the
//! lanes end together) and keeps two chunks a job in hand, so it never
//! waits for the next. Each item's answer goes to the same `done`
//! whichever lane ran it.

pub mod worker;

use anyhow::{Result, anyhow};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use worldline_case::parallel::par_each;

/// What a lane answers for one item: it names the item by its index, and
/// crosses between processes as one JSON line.
pub trait Answer: Serialize + DeserializeOwned + Send {
    /// The item's index (as handed to the lane).
    fn index(&self) -> u64;
}

/// Runs items in another process.
pub(crate) trait Remote<T>: Send {
    /// How many items it runs at once.
    fn jobs(&self) -> usize;
    /// Hand it these items (by index).
    fn send(&mut self, indexes: &[u64]) -> Result<()>;
    /// The next item it finished, by index, with its answer (`None`: not
    /// run, a signal came first). Once `halted` says so as it waits, its
    /// runs under way are stopped as this process's are.
    fn recv(&mut self, halted: &dyn Fn() -> bool) -> Result<(u64, Option<T>)>;
    /// What it is called in errors (`a fuzz worker (pid 12)`).
    fn name(&self) -> String;
    /// No more items: let it end, and fail if it did not end well.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// How much work a remote's chunk holds at most, and how many items.
const CHUNK_TIME: Duration = Duration::from_millis(4);
const CHUNK_MAX: usize = 32;

/// The items not yet handed out.
struct Queue<'a> {
    indexes: &'a [u64],
    next: AtomicUsize,
    /// Every lane's jobs.
    jobs: usize,
    /// Whether to hand nothing more out (a signal came).
    halted: &'a (dyn Fn() -> bool + Sync),
}

impl Queue<'_> {
    /// The next `n` items, fewer at the end, none once all are out or the
    /// queue is halted.
    fn take(&self, n: usize) -> &[u64] {
        if (self.halted)() {
            self.stop();
        }
        let len = self.indexes.len();
        let start = self.next.fetch_add(n, Ordering::Relaxed).min(len);
        &self.indexes[start..(start + n).min(len)]
    }

    /// Hand nothing more out.
    fn stop(&self) {
        self.next.store(self.indexes.len(), Ordering::Relaxed);
    }

    /// A chunk for a job that takes `per_run` an item: `CHUNK_TIME` of
    /// work, at most a quarter of a job's share of what is left.
    fn chunk(&self, per_run: Option<Duration>) -> usize {
        let left = self
            .indexes
            .len()
            .saturating_sub(self.next.load(Ordering::Relaxed));
        let by_time = per_run.map_or(1, |t| {
            (CHUNK_TIME.as_nanos() / t.as_nanos().max(1)).min(CHUNK_MAX as u128) as usize
        });
        by_time.min(left / (4 * self.jobs)).max(1)
    }
}

/// Run `indexes` on `local` threads of this process (with `item`) and on
/// `remotes`, handing each answer to `done` as it finishes. The first
/// error of any lane stops every lane from taking more; it is returned
/// once all have ended. Once `halted` says so, no lane takes more either:
/// the items handed out end, the rest are not run, nor is one a lane took
/// as it came (`item` answers `None`), and a remote's runs under way are
/// stopped as this process's are (a worker is sent the signal).
pub(crate) fn run<T: Answer>(
    indexes: &[u64],
    local: usize,
    remotes: Vec<Box<dyn Remote<T> + '_>>,
    item: &(dyn Fn(u64) -> Result<Option<T>> + Sync),
    done: &(dyn Fn(T) + Sync),
    halted: &(dyn Fn() -> bool + Sync),
) -> Result<()> {
    let queue = Queue {
        indexes,
        next: AtomicUsize::new(0),
        jobs: (local + remotes.iter().map(|r| r.jobs()).sum::<usize>()).max(1),
        halted,
    };
    let error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let fail = |e: anyhow::Error| {
        error.lock().expect("error lock").get_or_insert(e);
        queue.stop();
    };
    std::thread::scope(|scope| {
        for remote in remotes {
            let (queue, fail) = (&queue, &fail);
            scope.spawn(move || {
                if let Err(e) = feed(remote, queue, done) {
                    fail(e);
                }
            });
        }
        if local > 0 {
            // One `par_each` item a queued one, so the CPU slots are
            // handed over as on threads alone; items past the queue's end
            // do nothing.
            let ran = par_each(indexes.len(), local, |_| match queue.take(1) {
                [i] => item(*i).map(|t| t.map_or((), done)),
                _ => Ok(()),
            });
            if let Err(e) = ran {
                fail(e);
            }
        }
    });
    error.into_inner().expect("error lock").map_or(Ok(()), Err)
}

/// Whether `halted` says so within a moment (polled for 250 ms).
fn halted_soon(halted: &(dyn Fn() -> bool + Sync)) -> bool {
    let until = Instant::now() + std::time::Duration::from_millis(250);
    while !halted() {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    true
}

/// Keep `remote` busy until the queue is empty, then let it end.
fn feed<T: Answer>(
    mut remote: Box<dyn Remote<T> + '_>,
    queue: &Queue,
    done: &(dyn Fn(T) + Sync),
) -> Result<()> {
    // A remote whose process ended fails a write with EPIPE instead of
    // ending this one.
    crate::native::signals::hold_sigpipe_on_this_thread();
    let jobs = remote.jobs().max(1);
    let mut chunks: VecDeque<usize> = VecDeque::new();
    let mut given: BTreeSet<u64> = BTreeSet::new();
    // Since the first answer (not counting the process's start), and how
    // many came after it.
    let (mut first, mut after): (Option<Instant>, u32) = (None, 0);
    loop {
        // An item's time on one of the remote's jobs.
        let per_run = first
            .filter(|_| after > 0)
            .map(|f| f.elapsed() * jobs as u32 / after);
        while chunks.len() < 2 * jobs {
            let chunk = queue.take(queue.chunk(per_run));
            if chunk.is_empty() {
                break;
            }
            remote.send(chunk)?;
            given.extend(chunk);
            chunks.push_back(chunk.len());
        }
        let Some(front) = chunks.front_mut() else {
            break;
        };
        let (index, answer) = remote.recv(queue.halted)?;
        if !given.remove(&index) {
            return Err(anyhow!(
                "{} answered item {index}, which it was not given or had answered",
                remote.name(),
            ));
        }
        match answer {
            Some(t) => done(t),
            // Not run though no signal came here: one sent to the worker
            // alone, whose items would go uncounted, unsaid.
            // The signal may reach a worker (Ctrl-C reaches the process
            // group) a moment before this process notes its own: a verify
            // ended as an internal error one time in a dozen.
            None if !halted_soon(queue.halted) => {
                return Err(anyhow!(
                    "{} did not run item {index}: a signal reached it and not this process (signal this process or its process group, not a worker); run again",
                    remote.name(),
                ));
            }
            None => {}
        }
        match first {
            None => first = Some(Instant::now()),
            Some(_) => after += 1,
        }
        *front -= 1;
        if *front == 0 {
            chunks.pop_front();
        }
    }
    remote.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize)]
    struct Done(u64);

    impl Answer for Done {
        fn index(&self) -> u64 {
            self.0
        }
    }

    /// A remote in this process: answers what it is sent, in order, or
    /// misbehaves as told.
    struct Echo {
        pending: VecDeque<u64>,
        answer_twice: bool,
        /// Fail at this answer (counting from 0).
        fail_at: Option<usize>,
        answered: usize,
        finished: std::sync::Arc<AtomicUsize>,
    }

    impl Remote<Done> for Echo {
        fn jobs(&self) -> usize {
            1
        }
        fn send(&mut self, indexes: &[u64]) -> Result<()> {
            self.pending.extend(indexes);
            Ok(())
        }
        fn recv(&mut self, _: &dyn Fn() -> bool) -> Result<(u64, Option<Done>)> {
            let i = if self.answer_twice {
                *self.pending.front().expect("sent")
            } else {
                self.pending.pop_front().expect("sent")
            };
            self.answered += 1;
            match self.fail_at {
                Some(n) if n + 1 == self.answered => Err(anyhow!("worker failed")),
                _ => Ok((i, Some(Done(i)))),
            }
        }
        fn name(&self) -> String {
            "an echo".into()
        }
        fn finish(self: Box<Self>) -> Result<()> {
            self.finished.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
    }

    fn echo(finished: &std::sync::Arc<AtomicUsize>) -> Echo {
        Echo {
            pending: VecDeque::new(),
            answer_twice: false,
            fail_at: None,
            answered: 0,
            finished: finished.clone(),
        }
    }

    #[test]
    fn every_item_is_run_once_by_some_lane() {
        let indexes: Vec<u64> = (100..1100).collect();
        let finished = std::sync::Arc::new(AtomicUsize::new(0));
        let seen = Mutex::new(Vec::new());
        let remotes: Vec<Box<dyn Remote<Done>>> =
            vec![Box::new(echo(&finished)), Box::new(echo(&finished))];
        run(
            &indexes,
            2,
            remotes,
            &|i| Ok(Some(Done(i))),
            &|t| seen.lock().unwrap().push(t.0),
            &|| false,
        )
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, indexes);
        assert_eq!(finished.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_remote_alone_runs_everything_and_a_failing_one_stops_the_rest() {
        let indexes: Vec<u64> = (0..500).collect();
        let finished = std::sync::Arc::new(AtomicUsize::new(0));
        let count = AtomicUsize::new(0);
        run(
            &indexes,
            0,
            vec![Box::new(echo(&finished))],
            &|_| unreachable!(),
            &|_| {
                count.fetch_add(1, Ordering::Relaxed);
            },
            &|| false,
        )
        .unwrap();
        assert_eq!(count.load(Ordering::Relaxed), 500);

        let failing = Echo {
            fail_at: Some(40),
            ..echo(&finished)
        };
        let count = AtomicUsize::new(0);
        let err = run(
            &indexes,
            1,
            vec![Box::new(failing)],
            // Slower than the remote, so the queue still holds items when
            // the remote fails (a local lane that drained it first would
            // leave the remote nothing to fail at).
            &|i| {
                std::thread::sleep(Duration::from_micros(200));
                Ok(Some(Done(i)))
            },
            &|_| {
                count.fetch_add(1, Ordering::Relaxed);
            },
            &|| false,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "worker failed");
        assert!(count.load(Ordering::Relaxed) < 500);
    }

    #[test]
    fn an_answer_twice_is_an_error_not_a_second_count() {
        let indexes: Vec<u64> = (0..10).collect();
        let finished = std::sync::Arc::new(AtomicUsize::new(0));
        let twice = Echo {
            answer_twice: true,
            ..echo(&finished)
        };
        let err = run(
            &indexes,
            0,
            vec![Box::new(twice)],
            &|_| unreachable!(),
            &|_| {},
            &|| false,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "an echo answered item 0, which it was not given or had answered"
        );
    }

    #[test]
    fn chunks_follow_the_time_a_run_takes_and_shrink_at_the_end() {
        let indexes: Vec<u64> = (0..10_000).collect();
        let q = Queue {
            indexes: &indexes,
            next: AtomicUsize::new(0),
            jobs: 2,
            halted: &|| false,
        };
        assert_eq!(q.chunk(None), 1);
        assert_eq!(q.chunk(Some(Duration::from_micros(100))), 32);
        assert_eq!(q.chunk(Some(Duration::from_millis(1))), 4);
        assert_eq!(q.chunk(Some(Duration::from_secs(2))), 1);
        q.take(9_900);
        assert_eq!(q.chunk(Some(Duration::from_micros(100))), 12);
        q.stop();
        assert!(q.take(5).is_empty());
        assert_eq!(q.chunk(Some(Duration::from_micros(100))), 1);
    }
}
