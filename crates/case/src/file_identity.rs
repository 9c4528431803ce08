//! A file's identity as the filesystem reports it (device, inode, size,
//! modification and status-change times), for trusting what was learnt
//! about a file's bytes without reading them again. Any write to a file
//! changes its status-change time, which no program can set back, and
//! replacing it changes its inode; so a file whose identity is unchanged
//! holds the same bytes, provided the identity was taken once the file was
//! [`settled`] (git's "racy clean" rule: a write within the timestamp
//! resolution of a coarse filesystem could otherwise go unseen).

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How old a file's last change must be before its identity is trusted.
pub const SETTLED: Duration = Duration::from_secs(2);

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

/// Whether the file was last changed at least [`SETTLED`] ago.
pub fn settled(m: &Metadata) -> bool {
    let changed = SystemTime::UNIX_EPOCH
        + Duration::new(
            m.ctime().max(0) as u64,
            m.ctime_nsec().clamp(0, 999_999_999) as u32,
        );
    SystemTime::now()
        .duration_since(changed)
        .is_ok_and(|age| age >= SETTLED)
}

/// The identity of the file at `path` when it is still the one `before`
/// was taken of and has settled: what to note for bytes read between the
/// two (`None`: read them again next time).
pub fn kept(before: &Metadata, path: &Path) -> Option<String> {
    let now = std::fs::metadata(path).ok()?;
    let identity = of(&now);
    (identity == of(before) && settled(&now)).then_some(identity)
}
