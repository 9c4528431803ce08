//! Reading what a user or another machine hands the program, never
//! without a bound: a file is opened without blocking (a FIFO with no
//! writer does not hang the open), refused unless it is a regular file (a
//! FIFO, a device such as `/dev/zero`, a socket, or a symlink to one), and
//! read to at most its cap; an HTTP body is read chunk by chunk to at most
//! its cap. The caps are here, in one table (docs/architecture.md, "Inputs
//! and their caps", lists them with what happens past each).

use std::fmt;
use std::fs::File;
use std::io::{self, Read as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// The most runs one command makes (`fuzz --runs` times `--repeat`, a
/// case's `test --repeat` or `--group`, `repro --times`, `fork
/// --samples`): each is listed before the first starts, so a larger count
/// is refused instead of filling the memory; a report claiming more (a
/// shard's `repeat` given to `merge`) was not written by a command.
pub const RUNS: u64 = 10_000_000;

/// An agent or service component (`--agent`, the UI fork form's agent,
/// a world's `[service]` component).
pub const COMPONENT: u64 = 512 * MIB;
/// An object of the store (agents, cases, world files by SHA-256).
pub const OBJECT: u64 = 512 * MIB;
/// A run's bundle.
pub const BUNDLE: u64 = 1024 * MIB;
/// An export file (`import FILE`): a bundle and its objects in base64.
pub const EXPORT: u64 = 2048 * MIB;
/// A text document: a case, a world file, rows, a policy, a report.
pub const DOCUMENT: u64 = 256 * MIB;
/// The most tokens (keys, values and punctuation, not whitespace or
/// comments) a TOML document the program parses may hold: a case, a fault
/// profile, a world's `world.toml`, `worldline.toml`, a policy. The
/// reader takes 100–300 bytes a token, so the byte cap above alone let a
/// 256 MiB case take 25 GB. The largest real one, a case of `bench import
/// bfcl/multi_turn_long_context`, has 10,342 tokens (the repo's largest,
/// a hostile test's, 12,012): this is 40 times that.
pub const TOML_TOKENS: usize = 500_000;
/// A trace file (`case from-trace TRACE`): a long run's `otel` batches
/// one after another (64 MiB refused the export of a long run).
pub const TRACE: u64 = 1024 * MIB;
/// A model provider's answer to one attempt.
pub const MODEL_ANSWER: u64 = 32 * MIB;
/// An OTLP collector's answer (only its status and a few lines are used).
pub const COLLECTOR_ANSWER: u64 = MIB;
/// A helper program's stderr kept for its error message (`bench import`'s
/// converter); what comes past it is drained unread.
pub const TOOL_STDERR: u64 = MIB;

/// A line between a fuzz campaign or a `verify` and one of its worker
/// processes.
pub const WORKER_LINE: u64 = 16 * MIB;

/// Why a bounded read gave nothing.
#[derive(Debug)]
pub enum Refused {
    /// Not a regular file: what it is (`a FIFO`, `a character device`).
    NotAFile(&'static str),
    /// Longer than the cap (bytes).
    TooLarge(u64),
    Io(io::Error),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::NotAFile(kind) => write!(f, "is {kind}, not a regular file"),
            Refused::TooLarge(cap) => write!(f, "is larger than its cap of {}", size(*cap)),
            Refused::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Refused {}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Self {
        Refused::Io(e)
    }
}

/// A byte count in words (`512 MiB`, `1 KiB`, `300 bytes`).
pub fn size(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// What a file type is, in words, unless it is a regular file.
pub(crate) fn not_regular(ft: std::fs::FileType) -> Option<&'static str> {
    Some(if ft.is_file() {
        return None;
    } else if ft.is_dir() {
        "a folder"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "a special file"
    })
}

/// The regular file at `path` (symlinks followed), at most `cap` bytes.
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>, Refused> {
    read_open(open(path)?, cap)
}

/// The regular file at `path` open for reading (symlinks followed), to be
/// read with a bound of the caller's (`take`).
pub fn open(path: &Path) -> Result<File, Refused> {
    // O_NONBLOCK: opening a FIFO nobody writes to returns at once (and is
    // then refused) instead of waiting for a writer.
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    match not_regular(file.metadata()?.file_type()) {
        Some(kind) => Err(Refused::NotAFile(kind)),
        None => Ok(file),
    }
}

/// [`read`] as text; bytes that are not UTF-8 are an I/O error.
pub fn read_text(path: &Path, cap: u64) -> Result<String, Refused> {
    String::from_utf8(read(path, cap)?)
        .map_err(|_| Refused::Io(io::Error::other("is not UTF-8 text")))
}

/// Read an open file (opened without blocking), refused unless it is a
/// regular file, to at most `cap` bytes.
pub fn read_open(file: File, cap: u64) -> Result<Vec<u8>, Refused> {
    let meta = file.metadata()?;
    if let Some(kind) = not_regular(meta.file_type()) {
        return Err(Refused::NotAFile(kind));
    }
    if meta.len() > cap {
        return Err(Refused::TooLarge(cap));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // A file that grows while it is read still stops one byte past the cap.
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(Refused::TooLarge(cap));
    }
    Ok(bytes)
}

/// Why an HTTP body was not read whole: the transport's error, or too large.
#[derive(Debug)]
pub enum BodyError<E> {
    Http(E),
    /// The body went past this many bytes.
    TooLarge(u64),
}

/// An HTTP response's body, chunk by chunk from `chunks` (any client's
/// body stream; `declared` is its content length, if it gave one), to at
/// most `cap` bytes: an endless or huge body stops one chunk past the cap.
pub async fn body<S, B, E>(
    declared: Option<u64>,
    chunks: S,
    cap: u64,
) -> Result<Vec<u8>, BodyError<E>>
where
    S: futures_core::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    if declared.is_some_and(|n| n > cap) {
        return Err(BodyError::TooLarge(cap));
    }
    let mut chunks = std::pin::pin!(chunks);
    let mut bytes = Vec::new();
    while let Some(chunk) = std::future::poll_fn(|cx| chunks.as_mut().poll_next(cx)).await {
        let chunk = chunk.map_err(BodyError::Http)?;
        let chunk = chunk.as_ref();
        if (bytes.len() + chunk.len()) as u64 > cap {
            return Err(BodyError::TooLarge(cap));
        }
        bytes.extend_from_slice(chunk);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_up_to_the_cap_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read(&f, 5).unwrap(), b"12345");
        assert!(matches!(read(&f, 4), Err(Refused::TooLarge(4))));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read(&fifo, 5), Err(Refused::NotAFile("a FIFO"))));
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read(&zero, 5).unwrap_err();
        assert_eq!(e.to_string(), "is a character device, not a regular file");
        assert!(matches!(
            read(dir.path(), 5),
            Err(Refused::NotAFile("a folder"))
        ));
        assert_eq!(size(COMPONENT), "512 MiB");
        assert_eq!(size(2048), "2 KiB");
    }
}
