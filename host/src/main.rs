//! The `worldline` binary.

/// The host's allocator (decision 0390): many small JSON values a run,
/// made and dropped by the thousand in a campaign.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// No transparent huge pages for this process (decision 0405), set before
/// anything runs: mimalloc asks for them over its whole arena as it starts
/// (before `main`), and each first touch of one zeroes 2 MiB where a
/// command uses a few pages of it (9–10 of them, ~1 ms of a fork; the two
/// mimalloc's own start touches, ~0.2 ms of `--version`). The loader runs
/// `.preinit_array` before any constructor, mimalloc's included; musl's
/// start runs no `.preinit_array`, so there it is the first of
/// `.init_array`. A native agent's keeper gives them back to its tree.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[used]
#[unsafe(link_section = ".preinit_array")]
static NO_HUGE_PAGES: extern "C" fn() = no_huge_pages;

#[cfg(all(target_os = "linux", target_env = "musl"))]
#[used]
#[unsafe(link_section = ".init_array.00000")]
static NO_HUGE_PAGES_MUSL: extern "C" fn() = no_huge_pages;

#[cfg(target_os = "linux")]
extern "C" fn no_huge_pages() {
    // SAFETY: a flag on this process's memory; no memory is touched.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() {
    // Let `worldline history RUN | head` end quietly, as other Unix tools do.
    // SAFETY: restoring the default SIGPIPE action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // A write past a file-size limit (`ulimit -f`) fails with "File too
    // large" and is said, naming the file, as a full disk's is: the
    // default action ended worldline without a word (exit 153).
    // SAFETY: setting a signal's action before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let code = worldline::cli::main();
    // End as `std::process::exit` would (flush what std buffers, then
    // exit), less the destructors the C runtime runs at `exit`: the only
    // one besides the C runtime's own is mimalloc's, which hands every
    // page it holds back to the system one `madvise` at a time, splitting
    // huge pages (~80 calls, ~1 ms of a fork's 12), just before the end of
    // the process frees them all at once. `cli::main` has closed every
    // file, child and connection by now (decision 0395).
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process; nothing after it runs.
    unsafe { libc::_exit(code) }
}
