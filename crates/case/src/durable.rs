//! Writing store files so that a crash leaves the old content or the new,
//! never a torn file: bytes go to a temporary file beside the target, which
//! is then renamed (replace) or hard-linked (create-only) into place.
//! [`write`] makes that file without a name where Linux can (`O_TMPFILE`),
//! so a writer killed while writing leaves nothing (decision 0413). Temporary names carry
//! the writer's process id, so the ones a killed writer left behind can be
//! told apart from live ones and swept.
//!
//! Flushing to disk: a lone run syncs its own bundle; many runs (a suite)
//! share one flush of the store's filesystem per [`SyncBatch`] interval
//! instead of one `fsync` each (decision 0263), have each bundle's
//! writeback started as it finishes (decision 0399), and take their
//! bundles' files from those made ahead ([`spare`]).

mod spare;

pub use spare::{Spare, Spares};

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What marks a temporary name: `<target>.tmp<pid>-<n>`.
const TMP_MARK: &str = ".tmp";

/// A temporary file left this long is swept even if its process id is in
/// use (the id may have been reused, or belong to another pid namespace).
const ABANDONED: Duration = Duration::from_secs(3600);

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A temporary name beside `path`, unique within this process.
pub fn temp_path(path: &Path) -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!("{TMP_MARK}{}-{n}", std::process::id()));
    path.with_file_name(name)
}

/// Replace `path` with `bytes`: readers see the old file or the new one.
/// Where the system can (Linux's `O_TMPFILE`) the bytes go to a file with
/// no name, so a writer killed while writing leaves nothing behind; the
/// file is then linked in as `path`, or beside it and renamed over it.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |out| out.write_all(bytes))
}

/// [`write`] of what `fill` writes as it goes (an export's lines, a run
/// at a time), through a buffer: nothing is at `path` until `fill` has
/// written all of it, and an error of `fill`'s leaves what was there.
pub fn write_with<E: From<io::Error>>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), E> {
    #[cfg(target_os = "linux")]
    if let Some(file) = unnamed_beside(path) {
        let file = filled(file, fill)?;
        return Ok(link_unnamed(file, path)?);
    }
    let tmp = temp_path(path);
    let result = File::create(&tmp)
        .map_err(E::from)
        .and_then(|file| filled(file, fill))
        .and_then(|_| Ok(std::fs::rename(&tmp, path)?));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `file` with what `fill` wrote through a buffer, flushed.
fn filled<E: From<io::Error>>(
    file: File,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<File, E> {
    let mut out = io::BufWriter::new(file);
    fill(&mut out)?;
    Ok(out.into_inner().map_err(io::IntoInnerError::into_error)?)
}

/// A file without a name in `path`'s folder, or `None` where the kernel
/// or the filesystem has none (or cannot make one there: the named
/// temporary file's writing then says why).
#[cfg(target_os = "linux")]
fn unnamed_beside(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::OpenOptions::new()
        .write(true)
        .mode(0o666)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
        .ok()
}

/// Give `file` (made by [`unnamed_beside`], written) the name `path`:
/// linked in when `path` is new, else linked in under a temporary name
/// and renamed over it.
#[cfg(target_os = "linux")]
fn link_unnamed(file: File, path: &Path) -> io::Result<()> {
    match link(&file, path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let tmp = temp_path(path);
            link(&file, &tmp)?;
            let renamed = std::fs::rename(&tmp, path);
            if renamed.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            renamed
        }
        other => other,
    }
}

/// Give the open `file` the name `to` (`linkat` through `/proc/self/fd`,
/// which needs no privilege, where `AT_EMPTY_PATH` does).
#[cfg(target_os = "linux")]
fn link(file: &File, to: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::io::AsRawFd as _;
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    let to = std::ffi::CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: two NUL-terminated paths that outlive the call.
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Write a cache's note at `path` (its folder made, the temporary files a
/// killed writer left there swept), best effort: without the note the
/// next reader works it out again.
pub fn note(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        sweep(dir);
        let _ = write(path, bytes);
    }
}

/// Create `path` holding `bytes`, failing with `AlreadyExists` when it is
/// there: the file appears whole or not at all. Returns it open for
/// appending.
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<File> {
    let tmp = temp_path(path);
    let made = (|| {
        let mut file = File::options().append(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
            // A filesystem without hard links: still exclusive, the bytes
            // written with one call right after.
            Err(_) => {
                let mut file = File::options().append(true).create_new(true).open(path)?;
                file.write_all(bytes)?;
                Ok(file)
            }
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    made
}

/// [`create_new`], through `spare` (a nameless file made ahead in the
/// same folder) when given: `bytes` written into it, then the file linked
/// to `path`. Where the link cannot be made, the file is made as
/// [`create_new`] makes it.
pub fn create_new_from(spare: Option<Spare>, path: &Path, bytes: &[u8]) -> io::Result<File> {
    let Some(mut file) = spare else {
        return create_new(path, bytes);
    };
    file.write_all(bytes)?;
    match spare::link(&file, path) {
        Ok(()) => Ok(file),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => create_new(path, bytes),
    }
}

/// The process id in a temporary name, if `name` is one.
fn temp_owner(name: &str) -> Option<i32> {
    let at = name.rfind(TMP_MARK)? + TMP_MARK.len();
    let digits: String = name[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Remove the temporary files and folders in `dir` that a killed writer
/// left: their process is gone, or they are over an hour old. Returns how
/// many were removed. Errors are ignored: sweeping is housekeeping.
pub fn sweep(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_owner(&name) else {
            continue;
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > ABANDONED);
        if pid as u32 == std::process::id() || (process_alive(pid) && !old) {
            continue;
        }
        let path = entry.path();
        let gone = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if gone.is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Flush everything written to the filesystem holding `dir` to disk: one
/// call for every file of a batch (`syncfs`), where an `fsync` per file
/// waits for one journal commit each.
pub fn sync_filesystem(dir: &Path) -> io::Result<()> {
    let folder = File::open(dir)?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        // SAFETY: the descriptor is open for the duration of the call.
        if unsafe { libc::syncfs(folder.as_raw_fd()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: sync takes no arguments and cannot fail.
        unsafe { libc::sync() };
        folder.sync_all()
    }
}

/// Start writing `file`'s dirty pages to the device without waiting for
/// them (a flush later makes them durable): git's `core.fsyncMethod =
/// batch` does the same before its one flush. A hint: where the system has
/// no such call, nothing.
pub fn start_writeback(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        // SAFETY: the descriptor is open for the duration of the call; an
        // error leaves the pages to the flush, which reports it.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Runs written without a flush each, made durable together by a thread
/// of their own: every `interval` while runs finish ([`SyncBatch::ran`])
/// and once at the end ([`SyncBatch::finish`]), so no run waits on the
/// disk. What a crash of the machine (not of the process: the kernel holds
/// what was written) can lose is the runs that finished since the last
/// flush, at most one interval's worth. Each finished bundle's writeback
/// is started by the same thread within a [`SyncBatch::WRITEBACK`] tick,
/// so the device writes while later runs run and a flush finds little
/// left to write (decision 0399).
pub struct SyncBatch {
    shared: std::sync::Arc<Batch>,
    flusher: Option<std::thread::JoinHandle<()>>,
}

struct Batch {
    dir: PathBuf,
    state: Mutex<BatchState>,
    wake: std::sync::Condvar,
}

#[derive(Default)]
struct BatchState {
    /// Runs written since the last flush.
    pending: usize,
    /// Runs handed over in all, and how many of the first of them a
    /// flush has made durable ([`SyncBatch::durable`]).
    handed: u64,
    durable: u64,
    /// Their bundles whose writeback is not started yet (closed once it is).
    written: Vec<File>,
    done: bool,
    /// The first flush that failed, reported by [`SyncBatch::finish`].
    failed: Option<io::Error>,
}

impl Batch {
    fn lock(&self) -> std::sync::MutexGuard<'_, BatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start the writeback of the bundles handed over since the last tick
    /// (outside the lock), and close them.
    fn start_writebacks(&self) {
        let written = std::mem::take(&mut self.lock().written);
        for file in &written {
            start_writeback(file);
        }
    }

    /// Flush when runs are pending (outside the lock: runs keep finishing).
    fn flush_pending(&self) {
        self.start_writebacks();
        let (pending, handed) = {
            let mut state = self.lock();
            (std::mem::take(&mut state.pending), state.handed)
        };
        let flushed = match pending {
            0 => Ok(()),
            _ => sync_filesystem(&self.dir),
        };
        let mut state = self.lock();
        match flushed {
            // Every run handed over before the flush began is on disk.
            Ok(()) if state.failed.is_none() => state.durable = state.durable.max(handed),
            Ok(()) => {}
            Err(e) => {
                state.failed.get_or_insert(e);
            }
        }
    }
}

impl SyncBatch {
    /// The interval suites flush at.
    pub const INTERVAL: Duration = Duration::from_millis(250);

    /// How soon a finished bundle's writeback is started.
    pub const WRITEBACK: Duration = Duration::from_millis(5);

    /// Start flushing the filesystem of `dir` every `interval` while runs
    /// are pending, and the writeback of their bundles every
    /// [`Self::WRITEBACK`].
    pub fn start(dir: &Path, interval: Duration) -> SyncBatch {
        let shared = std::sync::Arc::new(Batch {
            dir: dir.to_path_buf(),
            state: Mutex::new(BatchState::default()),
            wake: std::sync::Condvar::new(),
        });
        let batch = shared.clone();
        let flusher = std::thread::Builder::new()
            .name("worldline-flush".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                loop {
                    let state = batch.lock();
                    let wait = next
                        .saturating_duration_since(Instant::now())
                        .min(Self::WRITEBACK);
                    let (state, _) = batch
                        .wake
                        .wait_timeout_while(state, wait, |s| !s.done)
                        .unwrap_or_else(|e| e.into_inner());
                    if state.done {
                        return;
                    }
                    drop(state);
                    if Instant::now() < next {
                        batch.start_writebacks();
                        continue;
                    }
                    batch.flush_pending();
                    next = Instant::now() + interval;
                }
            })
            .ok();
        SyncBatch { shared, flusher }
    }

    /// One more run written, to be flushed with the next batch; `bundle`,
    /// its file (written whole), has its writeback started and is closed
    /// by the batch's thread.
    pub fn ran(&self, bundle: Option<File>) {
        let mut state = self.shared.lock();
        state.pending += 1;
        state.handed += 1;
        state.written.extend(bundle);
    }

    /// How many runs have been handed over ([`Self::ran`]) so far.
    pub fn handed(&self) -> u64 {
        self.shared.lock().handed
    }

    /// How many of the runs handed over are on disk: the first
    /// `durable()` of them, in the order they were handed. Once a flush
    /// has failed it stays where it was (the failure is
    /// [`Self::finish`]'s error).
    pub fn durable(&self) -> u64 {
        self.shared.lock().durable
    }

    /// Flush what is left; the first flush that failed is the error.
    pub fn finish(mut self) -> io::Result<()> {
        self.stop();
        self.shared.flush_pending();
        match self.shared.lock().failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn stop(&mut self) {
        self.shared.lock().done = true;
        self.shared.wake.notify_all();
        if let Some(flusher) = self.flusher.take() {
            let _ = flusher.join();
        }
    }
}

impl Drop for SyncBatch {
    /// A suite that stopped on an error still flushes what it wrote.
    fn drop(&mut self) {
        if self.flusher.is_some() {
            self.stop();
            self.shared.flush_pending();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `write_with` fills is at the path only once whole: an error
    /// midway leaves the file that was there, and no file beside it.
    #[test]
    fn a_file_filled_as_it_goes_is_there_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let lines = |fail_at: Option<usize>| {
            write_with(&path, |out| {
                for i in 0..1000 {
                    if Some(i) == fail_at {
                        return Err(io::Error::other("a bundle could not be read"));
                    }
                    writeln!(out, "{{\"line\": {i}}}")?;
                }
                Ok(())
            })
        };
        lines(None).unwrap();
        let whole = std::fs::read_to_string(&path).unwrap();
        assert_eq!(whole.lines().count(), 1000);
        assert!(lines(Some(900)).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["out.jsonl"]);
        std::fs::remove_file(&path).unwrap();
        assert!(lines(Some(5)).is_err());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing written"
        );
    }

    #[test]
    fn temporary_names_carry_the_writer() {
        let tmp = temp_path(Path::new("/s/objects/ab12"));
        let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("ab12.tmp"), "{name}");
        assert_eq!(temp_owner(&name), Some(std::process::id() as i32));
        // The name an older worldline gave its cache temporaries.
        assert_eq!(temp_owner("abc.tmp4242"), Some(4242));
        assert_eq!(temp_owner("abc.cwasm"), None);
    }

    #[test]
    fn create_new_refuses_an_existing_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let mut f = create_new(&path, b"header\n").unwrap();
        f.write_all(b"event\n").unwrap();
        let again = create_new(&path, b"other\n").unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"header\nevent\n");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temporary file was left: {names:?}");
    }

    #[test]
    fn sweeping_removes_what_dead_writers_left_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        // No process has an id this large (Linux caps pids at 2^22).
        std::fs::write(dir.path().join("ab.cwasm.tmp99999999-0"), b"torn").unwrap();
        std::fs::write(dir.path().join("cd.tmp99999998"), b"torn").unwrap();
        std::fs::create_dir(dir.path().join("w.tmp99999997")).unwrap();
        let live = temp_path(&dir.path().join("ef"));
        std::fs::write(&live, b"being written").unwrap();
        std::fs::write(dir.path().join("ab.cwasm"), b"kept").unwrap();
        assert_eq!(sweep(dir.path()), 3);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left.contains(&"ab.cwasm".to_string()));
    }

    /// Whether descriptor `fd` of this process still names `path`.
    #[cfg(target_os = "linux")]
    fn open_as(fd: i32, path: &Path) -> bool {
        std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok_and(|p| p == path)
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_batch_starts_each_bundles_writeback_within_a_tick_and_closes_it() {
        use std::os::fd::AsRawFd as _;
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        // A flush interval no test waits for: only the writeback tick
        // hands the file back.
        let batch = SyncBatch::start(&dir, Duration::from_secs(600));
        let path = dir.join("run.jsonl");
        let mut file = File::create(&path).unwrap();
        file.write_all(b"{}\n").unwrap();
        let fd = file.as_raw_fd();
        batch.ran(Some(file));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while open_as(fd, &path) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!open_as(fd, &path), "closed by the batch's thread");
        assert_eq!(batch.shared.lock().pending, 1, "not flushed yet");
        // One handed over just before the end is closed by the end.
        let last = dir.join("last.jsonl");
        let file = File::create(&last).unwrap();
        let fd = file.as_raw_fd();
        batch.ran(Some(file));
        batch.finish().unwrap();
        assert!(!open_as(fd, &last));
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
    }

    #[test]
    fn a_batch_flushes_while_runs_finish_and_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let batch = SyncBatch::start(dir.path(), Duration::from_millis(5));
        for _ in 0..3 {
            std::fs::write(dir.path().join("run"), b"x").unwrap();
            batch.ran(None);
        }
        // Its thread flushes within a few periods; on a loaded machine it
        // may wait its turn for a while, so the test waits up to 10 s.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while batch.shared.lock().pending != 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(batch.shared.lock().pending, 0, "flushed by its thread");
        batch.ran(None);
        batch.finish().unwrap();
        let gone = SyncBatch::start(&dir.path().join("missing"), Duration::from_secs(60));
        gone.ran(None);
        assert_eq!(gone.finish().unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
