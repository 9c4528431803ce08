//! A file's identity as the filesystem reports it (device, inode, size,
//! modification and status-change times), for trusting what was learnt
//! about a file's bytes without reading them again. Any write to a file
//! changes its status-change time, which no program can set back, and
//! replacing it changes its inode; so a file whose identity is unchanged
//! holds the same bytes, provided the identity was taken once the file was
//! [`settled`] (git's "racy clean" rule: a write within the timestamp
//! resolution of the filesystem could otherwise go unseen).

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How old a file's last change must be before its identity is trusted
/// on a filesystem that keeps times to the second or coarser (FAT keeps
/// two seconds): its status-change time has no fraction of a second.
pub const SETTLED: Duration = Duration::from_secs(2);

/// How old on a filesystem that keeps finer times (ext4, xfs, btrfs,
/// tmpfs, whose times are the kernel's clock, which moves by a tick of at
/// most 10 ms): a write after that gets a later status-change time. A
/// fork right after the `test` that wrote its agent's object and compiled
/// form trusts them as later ones do.
pub const SETTLED_FINE: Duration = Duration::from_millis(250);

/// The identity of a file with metadata `m`, as one line of text.
pub fn of(m: &Metadata) -> String {
    format!(
        "{} {} {} {}.{} {}.{}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

/// Whether the file was last changed long enough ago: [`SETTLED_FINE`]
/// when its status-change time has a fraction of a second, else
/// [`SETTLED`].
pub fn settled(m: &Metadata) -> bool {
    settled_at(m.ctime(), m.ctime_nsec(), SystemTime::now())
}

/// [`settled`] for a status-change time of `secs` and `nanos`, at `now`.
fn settled_at(secs: i64, nanos: i64, now: SystemTime) -> bool {
    let nanos = nanos.clamp(0, 999_999_999) as u32;
    let changed = SystemTime::UNIX_EPOCH + Duration::new(secs.max(0) as u64, nanos);
    let needed = if nanos == 0 { SETTLED } else { SETTLED_FINE };
    now.duration_since(changed).is_ok_and(|age| age >= needed)
}

/// The identity of the file at `path` when it is still the one `before`
/// was taken of and has settled: what to note for bytes read between the
/// two (`None`: read them again next time).
pub fn kept(before: &Metadata, path: &Path) -> Option<String> {
    let now = std::fs::metadata(path).ok()?;
    let identity = of(&now);
    (identity == of(before) && settled(&now)).then_some(identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_with_a_fraction_settles_in_a_quarter_second_a_whole_one_in_two() {
        let at = |s: u64, ms: u64| {
            SystemTime::UNIX_EPOCH + Duration::new(s, 0) + Duration::from_millis(ms)
        };
        let s = 1_800_000_000;
        assert!(!settled_at(s as i64, 500_000_000, at(s, 700)));
        assert!(settled_at(s as i64, 500_000_000, at(s, 750)));
        assert!(!settled_at(s as i64, 0, at(s + 1, 900)));
        assert!(settled_at(s as i64, 0, at(s + 2, 0)));
        // A time ahead of the clock has not settled.
        assert!(!settled_at(s as i64 + 60, 1, at(s, 0)));
    }

    #[test]
    fn a_file_just_written_has_not_settled_and_a_quarter_second_later_has() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"bytes").unwrap();
        assert!(!settled(&std::fs::metadata(&path).unwrap()));
        std::thread::sleep(SETTLED_FINE + Duration::from_millis(50));
        let m = std::fs::metadata(&path).unwrap();
        // A filesystem that keeps whole seconds waits the longer time.
        assert_eq!(settled(&m), m.ctime_nsec() != 0);
    }
}
