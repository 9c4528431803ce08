//! `worldline_tests_run`: set when the tests are built by `tests/run`,
//! which exports `WORLDLINE_TESTS_RUN`. An end-to-end test that needs what
//! only `tests/run` installs (PostgreSQL, Chromium, Node's packages,
//! componentize-py, the pinned Python environments) carries
//! `#[cfg_attr(not(worldline_tests_run), ignore = "needs ...")]`
//! (`tests/needs.py` writes and checks them): a bare `cargo test` lists it
//! as ignored with its reason; under `tests/run` it runs, and a missing
//! install fails it.
//!
//! On Linux with glibc the `worldline` binary is linked as a fixed-address
//! (non-PIE) executable (decision 0395): the dynamic loader then applies ~200
//! relocations instead of ~56,000 and copies no relocated page at each start.
//! (A musl executable is static PIE, whose start-up code relocates itself:
//! given `-no-pie` as well it crashes before `main`.)

fn main() {
    println!("cargo::rustc-check-cfg=cfg(worldline_tests_run)");
    println!("cargo::rerun-if-env-changed=WORLDLINE_TESTS_RUN");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
    {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
    if std::env::var_os("WORLDLINE_TESTS_RUN").is_some() {
        println!("cargo::rustc-cfg=worldline_tests_run");
    }
}
