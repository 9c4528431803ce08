//! A suite's index rows committed by a thread of their own (decision
//! 0397). A run queues its row (`write.rs`); every 64 rows the queue is
//! committed in one transaction, which on ext4 took 2–7 ms of the run that
//! filled the batch. While a suite runs, its [`Committer`] takes that
//! commit off the runs' path: the run that fills a batch wakes the thread
//! ([`wake`]) and goes on. Rows are a cache of bundles already written, so
//! nothing waits for them; the suite's end commits what is left
//! (`settle`), after the thread has stopped. What a commit is, `write.rs`
//! says ([`super::committer`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// The thread committing one store's rows while a suite runs.
pub struct Committer {
    shared: Arc<Shared>,
    path: PathBuf,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// A batch is queued and waits for its commit.
    due: bool,
    done: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The committers running, by the path of their store's index.
static RUNNING: Mutex<BTreeMap<PathBuf, Arc<Shared>>> = Mutex::new(BTreeMap::new());

fn running() -> MutexGuard<'static, BTreeMap<PathBuf, Arc<Shared>>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wake the committer of the index at `path`; false when none runs (the
/// caller commits itself).
pub(super) fn wake(path: &Path) -> bool {
    let Some(shared) = running().get(path).cloned() else {
        return false;
    };
    shared.lock().due = true;
    shared.wake.notify_one();
    true
}

impl Committer {
    /// Call `commit` on a thread of its own each time [`wake`] is called
    /// for the index at `path`, until dropped. Where the thread cannot
    /// start, [`wake`] says so and its caller commits.
    pub(super) fn start(path: PathBuf, commit: impl Fn() + Send + 'static) -> Committer {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let mine = shared.clone();
        let thread = std::thread::Builder::new()
            .name("worldline-index".into())
            .spawn(move || commit_while_running(&mine, commit))
            .ok();
        if thread.is_some() {
            running().insert(path.clone(), shared.clone());
        }
        Committer {
            shared,
            path,
            thread,
        }
    }
}

fn commit_while_running(shared: &Shared, commit: impl Fn()) {
    loop {
        let state = shared.lock();
        let mut state = shared
            .wake
            .wait_while(state, |s| !s.due && !s.done)
            .unwrap_or_else(|e| e.into_inner());
        if state.done {
            return;
        }
        state.due = false;
        drop(state);
        commit();
    }
}

impl Drop for Committer {
    /// Stop waking the thread (rows queued from now on are committed by
    /// whoever queues them, or `settle`) and wait for its commit in
    /// progress.
    fn drop(&mut self) {
        let mut running = running();
        if running
            .get(&self.path)
            .is_some_and(|s| Arc::ptr_eq(s, &self.shared))
        {
            running.remove(&self.path);
        }
        drop(running);
        self.shared.lock().done = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
