//! The run index of a store at a path too long for SQLite, whose unix VFS
//! takes a file's full path of 512 bytes at most (a limit fixed when it is
//! built): such an index is opened as `/proc/self/fd/N/index.sqlite`, N an
//! open descriptor of the store's folder, through a VFS that is SQLite's
//! own but for taking that path as it is (its own resolves the link back
//! to the long path). The kernel follows the descriptor, so the log and
//! shared memory beside the index, named by appending to its path, are
//! found the same way (decision 0433).

use rusqlite::ffi;
use std::ffi::{CStr, c_char, c_int};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The VFS's name, to open an index of [`by_descriptor`] with.
pub(super) const VFS: &CStr = c"worldline-by-descriptor";

/// What a path opened through the descriptor begins with.
const PREFIX: &str = "/proc/self/fd/";

/// An index path this long or longer (bytes), once made absolute with its
/// links resolved as SQLite makes it, is opened through the descriptor:
/// SQLite's limit, 512, less a margin.
const LONG: usize = 500;

/// The SQLite unix VFS's `xFullPathname`, which the paths not opened
/// through a descriptor still go to.
type FullPathname =
    unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *const c_char, c_int, *mut c_char) -> c_int;

static UNIX_FULL_PATHNAME: OnceLock<Option<FullPathname>> = OnceLock::new();

/// An index at a path SQLite cannot take, and the store's folder held
/// open so it can be named by descriptor while the connection lives.
pub(super) struct ByDescriptor {
    /// What SQLite opens.
    pub(super) path: PathBuf,
    /// The store's folder, open for as long as the connection is.
    pub(super) folder: std::fs::File,
}

/// `index` (a file directly in its store's folder) opened through the
/// folder's descriptor when its path is too long for SQLite; `None` when
/// SQLite takes the path as it is, or the VFS could not be registered
/// (SQLite's open then says why it failed).
pub(super) fn by_descriptor(index: &Path) -> std::io::Result<Option<ByDescriptor>> {
    use std::os::fd::AsRawFd as _;
    let (Some(folder), Some(name)) = (index.parent(), index.file_name()) else {
        return Ok(None);
    };
    let folder = match folder.as_os_str().is_empty() {
        true => Path::new("."),
        false => folder,
    };
    // A relative store (`--store .worldline`) is as long as the folder
    // it is in makes it: SQLite prepends the current folder.
    let full = std::fs::canonicalize(folder).map_or(index.as_os_str().len(), |f| {
        f.as_os_str().len() + 1 + name.len()
    });
    if full < LONG || !registered() {
        return Ok(None);
    }
    let folder = std::fs::File::open(folder)?;
    let path = PathBuf::from(format!("{PREFIX}{}", folder.as_raw_fd())).join(name);
    Ok(Some(ByDescriptor { path, folder }))
}

/// Whether the VFS is registered (once per process).
fn registered() -> bool {
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        // SAFETY: `sqlite3_vfs_find` returns SQLite's own VFS, which lives
        // as long as the process; the copy registered is leaked, so it
        // does too, and it differs from the original only in its name, its
        // link in SQLite's list and `xFullPathname`.
        unsafe {
            let unix = ffi::sqlite3_vfs_find(c"unix".as_ptr());
            if unix.is_null() {
                return false;
            }
            let _ = UNIX_FULL_PATHNAME.set((*unix).xFullPathname);
            let mut vfs = *unix;
            vfs.zName = VFS.as_ptr();
            vfs.pNext = std::ptr::null_mut();
            vfs.xFullPathname = Some(full_pathname);
            ffi::sqlite3_vfs_register(Box::into_raw(Box::new(vfs)), 0) == ffi::SQLITE_OK
        }
    })
}

/// A path through a descriptor, taken as it is; any other, as SQLite's
/// unix VFS takes it.
unsafe extern "C" fn full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    path: *const c_char,
    n_out: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: SQLite passes a NUL-terminated path and a buffer of `n_out`
    // bytes.
    unsafe {
        let given = CStr::from_ptr(path).to_bytes_with_nul();
        if given.starts_with(PREFIX.as_bytes()) {
            if given.len() > usize::try_from(n_out).unwrap_or(0) {
                return ffi::SQLITE_CANTOPEN;
            }
            std::ptr::copy_nonoverlapping(given.as_ptr().cast::<c_char>(), out, given.len());
            return ffi::SQLITE_OK;
        }
        match UNIX_FULL_PATHNAME.get().copied().flatten() {
            Some(unix) => unix(vfs, path, n_out, out),
            None => ffi::SQLITE_CANTOPEN,
        }
    }
}
