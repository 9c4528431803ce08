//! Index-ordered parallel work: [`par_each`] hands indexes out to a few
//! threads from an atomic counter; [`par_map`] puts each result in its
//! index's slot, so whatever is computed from the results never depends on
//! the number of threads. Suites run this way; fuzz campaigns fold their
//! results into an order-independent tally as they come.
//!
//! `--jobs` may exceed the cores (runs that wait on a model endpoint), so
//! an item computes only while it holds one of the process's CPU slots
//! (one per core), and gives it up while it waits in real time
//! ([`waiting`]). Many runs can then wait at once while the cores work
//! through the others' bursts one at a time, instead of sharing the cores
//! out among every thread that has work.

use anyhow::Result;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

/// `f(0) .. f(total - 1)` on `jobs` threads, results in index order; the
/// first error stops the rest.
pub fn par_map<T: Send>(
    total: usize,
    jobs: usize,
    f: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..total).map(|_| None).collect());
    par_each(total, jobs, |i| {
        let t = f(i)?;
        results.lock().expect("results lock")[i] = Some(t);
        Ok(())
    })?;
    Ok(results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .flatten()
        .collect())
}

/// `f(0) .. f(total - 1)` on `jobs` threads, keeping nothing (the caller
/// folds the results into something of its own); the first error stops the
/// rest.
///
/// Each item computes holding a CPU slot, unless the calling thread holds
/// one itself (work nested in an item is that item's work).
pub fn par_each(total: usize, jobs: usize, f: impl Fn(usize) -> Result<()> + Sync) -> Result<()> {
    let gated = !HOLDS_SLOT.get();
    let next = AtomicUsize::new(0);
    let error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, total.max(1)) {
            scope.spawn(|| {
                // A thread keeps its slot from one item to the next (no
                // hand-over between threads for CPU-bound work) unless a
                // thread coming back from a wait needs it; it takes an
                // index only once it holds a slot, so no item waits on a
                // thread that has none.
                let mut slot: Option<CpuSlot> = None;
                loop {
                    if gated {
                        if slot.is_some() && gate().anyone_returning() {
                            slot = None;
                        }
                        if slot.is_none() {
                            slot = Some(CpuSlot::take());
                        }
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    if let Err(e) = f(i) {
                        error.lock().expect("error lock").get_or_insert(e);
                        next.store(total, Ordering::Relaxed);
                        break;
                    }
                }
            });
        }
    });
    match error.into_inner().expect("error lock") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The process's CPU slots: one per core. A thread coming back from a
/// wait takes a free slot before an item that has not started, so the
/// runs in flight finish before more start.
struct Gate {
    slots: Mutex<Slots>,
    /// Threads coming back from a wait wait here.
    back: Condvar,
    /// Items that have not started wait here.
    fresh: Condvar,
}

struct Slots {
    free: usize,
    /// Threads coming back from a wait, waiting for a slot.
    returning: usize,
}

fn gate() -> &'static Gate {
    static GATE: OnceLock<Gate> = OnceLock::new();
    GATE.get_or_init(|| Gate {
        slots: Mutex::new(Slots {
            free: std::thread::available_parallelism().map_or(1, |n| n.get()),
            returning: 0,
        }),
        back: Condvar::new(),
        fresh: Condvar::new(),
    })
}

impl Gate {
    fn acquire(&self, returning: bool) {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if returning {
            s.returning += 1;
            while s.free == 0 {
                s = self.back.wait(s).unwrap_or_else(|e| e.into_inner());
            }
            s.returning -= 1;
        } else {
            while s.free == 0 || s.returning > 0 {
                s = self.fresh.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
        s.free -= 1;
        if s.free > 0 {
            self.wake(&s);
        }
        HOLDS_SLOT.set(true);
    }

    fn release(&self) {
        HOLDS_SLOT.set(false);
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        s.free += 1;
        self.wake(&s);
    }

    /// Whether a thread coming back from a wait is waiting for a slot.
    fn anyone_returning(&self) -> bool {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .returning
            > 0
    }

    /// Hand a free slot on: to a returning thread first.
    fn wake(&self, s: &Slots) {
        if s.returning > 0 {
            self.back.notify_one();
        } else {
            self.fresh.notify_one();
        }
    }
}

thread_local! {
    /// Whether this thread holds a CPU slot.
    static HOLDS_SLOT: Cell<bool> = const { Cell::new(false) };
}

/// A CPU slot held by an item of [`par_each`]; given back when dropped.
struct CpuSlot;

impl CpuSlot {
    fn take() -> Self {
        gate().acquire(false);
        CpuSlot
    }
}

impl Drop for CpuSlot {
    fn drop(&mut self) {
        gate().release();
    }
}

/// Taken back when a wait ends, even by a panic.
struct Retake;

impl Drop for Retake {
    fn drop(&mut self) {
        gate().acquire(true);
    }
}

/// Run `wait` — a real-time wait (a model endpoint, a backoff, a connection
/// slot) — without this thread's CPU slot, if it holds one, so another item
/// computes meanwhile; the slot is taken back before this returns. `wait`
/// must not hold anything an item computing may need (a lock it takes).
pub fn waiting<T>(wait: impl FnOnce() -> T) -> T {
    if !HOLDS_SLOT.get() {
        return wait();
    }
    gate().release();
    let _retake = Retake;
    wait()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_map_keeps_order_and_stops_at_an_error() {
        let doubled = par_map(100, 3, |i| Ok(i * 2)).unwrap();
        assert_eq!(doubled, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        let err = par_map(100, 2, |i| {
            if i == 40 {
                anyhow::bail!("boom at {i}")
            }
            Ok(i)
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "boom at 40");
    }

    /// Items compute at most one per core; while waiting they hold no
    /// slot, so more items than cores can wait at once.
    #[test]
    fn items_compute_one_per_core_and_wait_without_a_slot() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let computing = AtomicUsize::new(0);
        let most_computing = AtomicUsize::new(0);
        let waiting_now = AtomicUsize::new(0);
        let most_waiting = AtomicUsize::new(0);
        let step = || {
            let n = computing.fetch_add(1, Ordering::SeqCst) + 1;
            most_computing.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            computing.fetch_sub(1, Ordering::SeqCst);
        };
        par_each(32, 16, |_| {
            step();
            waiting(|| {
                let n = waiting_now.fetch_add(1, Ordering::SeqCst) + 1;
                most_waiting.fetch_max(n, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(50));
                waiting_now.fetch_sub(1, Ordering::SeqCst);
            });
            step();
            Ok(())
        })
        .unwrap();
        assert!(most_computing.load(Ordering::SeqCst) <= cores);
        assert!(
            most_waiting.load(Ordering::SeqCst) > cores,
            "waits overlapped only {} at a time",
            most_waiting.load(Ordering::SeqCst)
        );
        assert!(!HOLDS_SLOT.get(), "the slots are given back");
    }

    /// Work nested in an item runs on the item's slot: no deadlock when
    /// every slot is held by an item that starts a par_each of its own.
    #[test]
    fn nested_work_runs_on_the_items_slot() {
        let total = AtomicUsize::new(0);
        par_each(8, 8, |_| {
            par_each(4, 4, |_| {
                total.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
        })
        .unwrap();
        assert_eq!(total.load(Ordering::SeqCst), 32);
    }
}
