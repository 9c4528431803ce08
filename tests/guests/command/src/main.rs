//! Test guest: a plain WASI command. It exports `wasi:cli/run`, not
//! worldline's `run`, so worldline must refuse it at load.

fn main() {
    println!("hello from a wasi:cli command");
}
