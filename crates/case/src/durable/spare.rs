//! Nameless files made ahead in the folder a suite's bundles go to, by a
//! thread of their own (decision 0396). A run takes one for its bundle
//! ([`super::create_new_from`]): its header is written into it and it is
//! linked to the run's name, whole, as a file made on the spot would be;
//! but the run does not wait for the filesystem to find a free inode. On
//! ext4 without a journal that search skips every inode freed in the last
//! minutes, one lookup each: after a suite's runs were deleted it costs
//! 0.1–0.2 ms a file. The files have no name (`O_TMPFILE`), so a run never
//! waits on the folder's lock while one is made, and those no run took
//! vanish with the process, even a killed one. Linux only; elsewhere no
//! file is made ahead.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// An empty file made ahead, without a name, open for appending.
pub type Spare = File;

/// The files made ahead for one folder, and the thread that makes them.
pub struct Spares {
    shared: Arc<Shared>,
    maker: Option<JoinHandle<()>>,
}

struct Shared {
    dir: PathBuf,
    ahead: usize,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    ready: VecDeque<Spare>,
    done: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep `ahead` files ready until told to stop. A file that cannot be
    /// made ends the thread: runs then make their own, and meet the error
    /// themselves.
    fn make(&self) {
        loop {
            let state = self.lock();
            let state = self
                .wake
                .wait_while(state, |s| s.ready.len() >= self.ahead && !s.done)
                .unwrap_or_else(|e| e.into_inner());
            if state.done {
                return;
            }
            drop(state);
            let Ok(file) = nameless(&self.dir) else {
                return;
            };
            let mut state = self.lock();
            if state.done {
                return;
            }
            state.ready.push_back(file);
        }
    }
}

impl Spares {
    /// Start keeping `ahead` empty files ready in `dir` (each an open
    /// descriptor).
    pub fn start(dir: &Path, ahead: usize) -> Spares {
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            ahead: ahead.max(1),
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let maker = shared.clone();
        let maker = std::thread::Builder::new()
            .name("worldline-spare".into())
            .spawn(move || maker.make())
            .ok();
        Spares { shared, maker }
    }

    /// A file made ahead, if one is ready: a run never waits for one. The
    /// thread is woken once half are taken, not at each (a wake is a
    /// system call).
    pub fn take(&self) -> Option<Spare> {
        let mut state = self.shared.lock();
        let spare = state.ready.pop_front();
        if state.ready.len() == self.shared.ahead / 2 {
            self.shared.wake.notify_one();
        }
        spare
    }
}

impl Drop for Spares {
    /// Stop the thread; the files no run took vanish as they close.
    fn drop(&mut self) {
        self.shared.lock().done = true;
        self.shared.wake.notify_all();
        if let Some(maker) = self.maker.take() {
            let _ = maker.join();
        }
    }
}

/// A file without a name in `dir`, open for appending.
#[cfg(target_os = "linux")]
fn nameless(dir: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    File::options()
        .append(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o666)
        .open(dir)
}

#[cfg(not(target_os = "linux"))]
fn nameless(_dir: &Path) -> io::Result<File> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Give `file` (made by [`nameless`]) the name `path`, in the folder it
/// was made in; `AlreadyExists` when the name is taken. By the descriptor
/// itself (`AT_EMPTY_PATH`: Linux 6.10 on, or with `CAP_DAC_READ_SEARCH`),
/// else through `/proc/self/fd`, whose lookup costs more; once refused,
/// the process goes through `/proc` from then on.
#[cfg(target_os = "linux")]
pub(super) fn link(file: &File, path: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    static NO_EMPTY_PATH: AtomicBool = AtomicBool::new(false);
    if !NO_EMPTY_PATH.load(Ordering::Relaxed) {
        let by_descriptor = linkat(file.as_raw_fd(), "", path, libc::AT_EMPTY_PATH);
        match by_descriptor {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::EPERM | libc::EINVAL)
                ) =>
            {
                NO_EMPTY_PATH.store(true, Ordering::Relaxed);
            }
            done => return done,
        }
    }
    link_through_proc(file, path)
}

#[cfg(target_os = "linux")]
fn link_through_proc(file: &File, path: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let from = format!("/proc/self/fd/{}", file.as_raw_fd());
    linkat(libc::AT_FDCWD, &from, path, libc::AT_SYMLINK_FOLLOW)
}

#[cfg(target_os = "linux")]
fn linkat(fd: i32, from: &str, to: &Path, flags: i32) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt as _;
    let from = CString::new(from)?;
    let to = CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both strings are NUL-terminated and live across the call.
    match unsafe { libc::linkat(fd, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), flags) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn link(_file: &File, _path: &Path) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(test)]
mod tests {
    use super::super::create_new_from;
    use super::*;
    use std::io::Write as _;
    use std::time::{Duration, Instant};

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The file made ahead, waiting up to 10 s for the thread (a loaded
    /// machine may run it late).
    fn taken(spares: &Spares) -> Spare {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(spare) = spares.take() {
                return spare;
            }
            assert!(Instant::now() < deadline, "no spare file was made");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn a_bundle_made_from_a_spare_holds_what_was_written_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let spares = Spares::start(dir.path(), 2);
        let path = dir.path().join("run.jsonl");
        let spare = taken(&spares);
        let mut f = create_new_from(Some(spare), &path, b"header\n").unwrap();
        f.write_all(b"event\n").unwrap();
        drop(f);
        // Taken by another writer first: refused, the spare not left behind.
        let again = create_new_from(Some(taken(&spares)), &path, b"other\n");
        assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"header\nevent\n");
        drop(spares);
        assert_eq!(names(dir.path()), ["run.jsonl"]);
    }

    #[test]
    fn files_are_made_ahead_up_to_the_count_without_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let spares = Spares::start(dir.path(), 3);
        let deadline = Instant::now() + Duration::from_secs(10);
        while spares.shared.lock().ready.len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        // Never more than asked for, and nothing in the folder to sweep.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(spares.shared.lock().ready.len(), 3);
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    }

    /// Where a file cannot be linked by its descriptor, it is linked
    /// through `/proc`, refusing a taken name the same way.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_spare_is_linked_through_proc_as_by_its_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let mut file = nameless(dir.path()).unwrap();
        file.write_all(b"header\n").unwrap();
        link_through_proc(&file, &path).unwrap();
        let again = link_through_proc(&nameless(dir.path()).unwrap(), &path);
        assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"header\n");
        assert_eq!(names(dir.path()), ["run.jsonl"]);
    }

    #[test]
    fn a_folder_that_cannot_hold_files_gives_no_spares() {
        let dir = tempfile::tempdir().unwrap();
        let spares = Spares::start(&dir.path().join("missing"), 2);
        std::thread::sleep(Duration::from_millis(20));
        assert!(spares.take().is_none());
    }
}
