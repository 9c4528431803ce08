//! Index-ordered parallel work: [`par_map`] hands indexes out to a few
//! threads from an atomic counter and puts each result in its index's slot,
//! so whatever is computed from the results never depends on the number of
//! threads. Suites and fuzz campaigns both run this way.

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
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..total).map(|_| None).collect());
    let error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, total.max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    match f(i) {
                        Ok(t) => results.lock().expect("results lock")[i] = Some(t),
                        Err(e) => {
                            error.lock().expect("error lock").get_or_insert(e);
                            next.store(total, Ordering::Relaxed);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = error.into_inner().expect("error lock") {
        return Err(e);
    }
    Ok(results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .flatten()
        .collect())
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
