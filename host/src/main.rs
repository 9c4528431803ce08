//! The `worldline` binary.

/// The host's allocator (decision 0390): many small JSON values a run,
/// made and dropped by the thousand in a campaign.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Let `worldline history RUN | head` end quietly, as other Unix tools do.
    // SAFETY: restoring the default SIGPIPE action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(worldline::cli::main());
}
