//! The `worldline` binary.

fn main() {
    // Let `worldline history RUN | head` end quietly, as other Unix tools do.
    // SAFETY: restoring the default SIGPIPE action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(worldline::cli::main());
}
