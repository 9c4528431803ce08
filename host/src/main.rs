//! The `worldline` binary.

fn main() {
    std::process::exit(worldline::cli::main());
}
