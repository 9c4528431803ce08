//! Where the libraries' warnings and notes go. The engine and the runtime
//! never write to the process's streams; what they have to tell a user in
//! passing (a damaged compile cache recompiled, an index row not written,
//! a damaged index rebuilt) goes through the `log` facade, and the CLI
//! prints worldline's own records on stderr as `warning: …` and `note: …`,
//! the way it always has. Other crates' records (wasmtime, Cranelift) are
//! not printed.

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Stderr;

impl Log for Stderr {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= Level::Info && metadata.target().starts_with("worldline")
    }

    fn log(&self, record: &Record) {
        if self.enabled(record.metadata()) {
            let word = if record.level() <= Level::Warn {
                "warning"
            } else {
                "note"
            };
            eprintln!("{word}: {}", record.args());
        }
    }

    fn flush(&self) {}
}

/// Print the libraries' warnings and notes on stderr from now on.
pub fn to_stderr() {
    static STDERR: Stderr = Stderr;
    if log::set_logger(&STDERR).is_ok() {
        log::set_max_level(LevelFilter::Info);
    }
}
