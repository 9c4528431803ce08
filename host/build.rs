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
//!
//! On x86-64 Linux with glibc, whose default linker is rust-lld, the
//! binary's functions are laid out in the order `link-order.txt` lists
//! them (decision 0431, `benches/link-order.sh` writes it): the code a
//! suite, a fork, a campaign and a verify run comes first and together.
//! `WORLDLINE_LINK_ORDER=0` leaves the file out, for a linker that does not
//! read it.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(worldline_tests_run)");
    println!("cargo::rerun-if-env-changed=WORLDLINE_TESTS_RUN");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
    {
        println!("cargo::rustc-link-arg-bins=-no-pie");
        println!("cargo::rerun-if-env-changed=WORLDLINE_LINK_ORDER");
        if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64")
            && std::env::var_os("WORLDLINE_LINK_ORDER").is_none_or(|v| v != "0")
        {
            link_in_order();
        }
    }
    if std::env::var_os("WORLDLINE_TESTS_RUN").is_some() {
        println!("cargo::rustc-cfg=worldline_tests_run");
    }
}

/// Give the linker `link-order.txt` (each argument passed as it is, so a
/// path with a comma or a space is one), saying nothing of the names it
/// lists that this build does not have.
fn link_in_order() {
    println!("cargo::rerun-if-changed=link-order.txt");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let file = std::path::Path::new(&dir).join("link-order.txt");
    for arg in [
        "--symbol-ordering-file",
        &file.display().to_string(),
        "--no-warn-symbol-ordering",
    ] {
        println!("cargo::rustc-link-arg-bins=-Xlinker");
        println!("cargo::rustc-link-arg-bins={arg}");
    }
}
