//! Index-ordered parallel work: [`par_each`] hands indexes out to a few
//! threads from an atomic counter; [`par_map`] puts each result in its
//! index's slot, so whatever is computed from the results never depends on
//! the number of threads. Suites run this way; fuzz campaigns fold their
//! results into an order-independent tally as they come.

use anyhow::Result;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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
pub fn par_each(total: usize, jobs: usize, f: impl Fn(usize) -> Result<()> + Sync) -> Result<()> {
    let next = AtomicUsize::new(0);
    let error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, total.max(1)) {
            scope.spawn(|| {
                loop {
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
}
