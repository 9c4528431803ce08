//! Work begun ahead of need on another thread of a scope, and done by the
//! thread that needs it when the other has not begun it yet (decision
//! 0407). A command that starts a thread to make its sandbox or parse its
//! case while it reads a run would otherwise wait, when it needs the
//! result, for a thread that a busy machine (or a VM that keeps its idle
//! CPU halted) may not have started at all: then it waited for the start
//! and the whole work, where doing the work itself costs only the work.
//! The result is handed over as the work ends; [`Ahead::take`] then
//! joins the thread, which the scope's end would wait for anyway, so
//! that none is left running its exit when a process is copied at a
//! fork point (the fork server copies none with other threads alive).

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{Result as Outcome, Scope, ScopedJoinHandle};

/// Work handed to a thread of a scope; [`Ahead::take`] has its result.
pub struct Ahead<'scope, F, T> {
    shared: Arc<Shared<F, T>>,
    /// The other thread, joined by [`Ahead::take`].
    thread: Option<ScopedJoinHandle<'scope, ()>>,
}

struct Shared<F, T> {
    /// The work, until one thread or the other begins it.
    work: Mutex<Option<F>>,
    /// Its outcome, once the other thread has done it.
    outcome: Mutex<Option<Outcome<T>>>,
    done: Condvar,
}

/// Begin `work` on a thread of `scope` as soon as that thread runs.
pub fn spawn<'scope, F, T>(scope: &'scope Scope<'scope, '_>, work: F) -> Ahead<'scope, F, T>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    let mut ahead = Ahead::new(work);
    let theirs = Arc::clone(&ahead.shared);
    ahead.thread = Some(scope.spawn(move || theirs.begin()));
    ahead
}

impl<F: FnOnce() -> T, T> Ahead<'_, F, T> {
    fn new(work: F) -> Self {
        Ahead {
            shared: Arc::new(Shared {
                work: Mutex::new(Some(work)),
                outcome: Mutex::new(None),
                done: Condvar::new(),
            }),
            thread: None,
        }
    }

    /// The work's result: done here when the other thread has not begun
    /// it, else waited for (its panic goes on here); the other thread
    /// joined either way.
    pub fn take(mut self) -> T {
        let outcome = self.outcome();
        if let Some(thread) = self.thread.take() {
            // Its work cannot panic it: `begin` catches what the work throws.
            let _ = thread.join();
        }
        match outcome {
            Ok(t) => t,
            Err(panic) => resume_unwind(panic),
        }
    }

    fn outcome(&self) -> Outcome<T> {
        let work = lock(&self.shared.work).take();
        if let Some(work) = work {
            return Ok(work());
        }
        let mut outcome = lock(&self.shared.outcome);
        loop {
            match outcome.take() {
                Some(done) => return done,
                None => {
                    outcome =
                        (self.shared.done.wait(outcome)).unwrap_or_else(PoisonError::into_inner)
                }
            }
        }
    }
}

impl<F: FnOnce() -> T, T> Shared<F, T> {
    /// The other thread's part: the work, unless the taker began it.
    fn begin(&self) {
        let work = lock(&self.work).take();
        if let Some(work) = work {
            let outcome = catch_unwind(AssertUnwindSafe(work));
            *lock(&self.outcome) = Some(outcome);
            self.done.notify_all();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn here() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    /// Work no other thread has begun is done by the taker.
    #[test]
    fn work_not_begun_is_done_by_the_taker() {
        let ahead = Ahead::new(here);
        assert_eq!(ahead.take(), here());
    }

    /// Work the other thread has begun is waited for, not done again; the
    /// other thread then finds nothing to do.
    #[test]
    fn work_begun_elsewhere_is_waited_for_and_done_once() {
        let (began_tx, began) = mpsc::channel();
        let (finish, finish_rx) = mpsc::channel::<()>();
        let ahead = Ahead::new(move || {
            began_tx.send(()).unwrap();
            finish_rx.recv().unwrap();
            here()
        });
        let theirs = Arc::clone(&ahead.shared);
        std::thread::scope(|s| {
            s.spawn(|| theirs.begin());
            began.recv().unwrap();
            finish.send(()).unwrap();
            assert_ne!(ahead.take(), here());
            theirs.begin();
        });
    }

    /// A panic in work done on the other thread reaches the taker.
    #[test]
    fn a_panic_ahead_reaches_the_taker() {
        let ahead = Ahead::new(|| -> u32 { panic!("bad work") });
        let theirs = Arc::clone(&ahead.shared);
        std::thread::scope(|s| {
            s.spawn(|| theirs.begin());
        });
        let caught = catch_unwind(AssertUnwindSafe(|| ahead.take()));
        let panic = caught.expect_err("the panic goes on in the taker");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"bad work"));
    }

    /// Through a scope: the result arrives whichever thread did the work.
    #[test]
    fn a_scope_gets_the_result() {
        let total = std::thread::scope(|s| {
            let ahead = spawn(s, || (1..=10).sum::<u32>());
            ahead.take()
        });
        assert_eq!(total, 55);
    }
}
