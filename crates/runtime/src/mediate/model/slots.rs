//! Connection slots: at most `[model] max_connections` calls in flight to
//! one endpoint from this process, whatever `--jobs` is, so a suite can
//! run many runs at once without flooding a rate-limited provider. A call
//! waits for a slot in real time, bounded by its time budget; the wait is
//! recorded as metadata (`queued_ms`) and never reaches the agent.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

/// The free slots of one endpoint.
pub(crate) struct Slots {
    free: Mutex<u32>,
    freed: Condvar,
}

/// A slot held for one attempt; freed when dropped.
pub(crate) struct Held(Arc<Slots>);

impl Drop for Held {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// Every endpoint's slots, by URL and limit.
type Registry = Mutex<BTreeMap<(String, u32), Arc<Slots>>>;

/// The slots of `url` with `max` of them, shared by every run of the
/// process that names the same endpoint and limit.
pub(crate) fn of(url: &str, max: u32) -> Arc<Slots> {
    static ALL: OnceLock<Registry> = OnceLock::new();
    ALL.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry((url.to_string(), max))
        .or_insert_with(|| {
            Arc::new(Slots {
                free: Mutex::new(max),
                freed: Condvar::new(),
            })
        })
        .clone()
}

impl Slots {
    /// Wait for a slot until `deadline`; `None` when none came free.
    pub(crate) fn acquire(self: &Arc<Self>, deadline: Instant) -> Option<Held> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            let left = deadline.checked_duration_since(Instant::now())?;
            free = self
                .freed
                .wait_timeout(free, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *free -= 1;
        Some(Held(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    #[test]
    fn no_more_than_max_are_held_at_once() {
        let slots = of("http://slots-test", 2);
        let (now, peak) = (AtomicU32::new(0), AtomicU32::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let held = slots.acquire(Instant::now() + Duration::from_secs(30));
                    assert!(held.is_some());
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        let first = slots.acquire(Instant::now());
        let second = slots.acquire(Instant::now());
        assert!(first.is_some() && second.is_some());
        assert!(
            slots
                .acquire(Instant::now() + Duration::from_millis(30))
                .is_none(),
            "a third waits and gives up at its deadline"
        );
    }
}
