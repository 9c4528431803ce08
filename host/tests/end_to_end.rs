//! The end-to-end tests, as one test binary: each file beside this one is
//! a module of it (`store.rs` is `store::`), sharing `common/` and
//! `ui_support/`. One binary links the `worldline` crate once instead of
//! once per file, and builds each guest (Rust, Python, JavaScript) once
//! per `cargo test` instead of once per file that uses it (decision 0302).
//! Run one file's tests with `cargo test --test end_to_end store::`.

#[macro_use]
mod common;
mod ui_support;

mod bench_agentdojo;
mod bench_bfcl;
mod bench_tau2;
mod bench_tau2_user;
mod conformance;
mod conversation;
mod crash;
mod decisions;
mod examples;
mod fork_check;
mod fuzz;
mod fuzz_workers;
mod grading;
mod hardening_bounds;
mod hardening_impossible;
mod hardening_inputs;
mod hardening_native;
mod hardening_odd_paths;
mod hardening_results;
mod hardening_secrets;
mod hardening_store;
mod hostile;
mod http;
mod http_world;
mod injection;
mod js;
mod js_sdks;
mod layers;
mod long_horizon;
mod mcp_server;
mod model;
mod native;
mod native_settings;
mod older_rules;
mod otel;
mod pg_gc;
mod pg_named;
mod pg_roles;
mod pg_store;
mod pg_tls;
mod pg_views;
mod porting;
mod properties_reports;
mod python;
mod python_http;
mod python_sdks;
mod ray_recipe;
mod redact;
mod regress;
mod replay;
mod reports;
mod resume;
mod resume_native;
mod sandbox;
mod scaffold;
mod serve;
mod services;
mod store;
mod streams;
mod suite;
mod training;
mod ui;
mod ui_browser;
mod user_tools;
mod validate;
mod verify_workers;
mod vocabulary;

/// Every `.rs` file beside this one is declared above: with `autotests =
/// false` a file not declared here would compile into nothing and its
/// tests would silently never run.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = common::workspace_root().join("host/tests");
    let root = std::fs::read_to_string(dir.join("end_to_end.rs")).expect("reading end_to_end.rs");
    let declared: std::collections::BTreeSet<String> = root
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_string)
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("listing host/tests") {
        let path = entry.expect("a host/tests entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let is_module =
            path.extension().is_some_and(|e| e == "rs") || path.join("mod.rs").is_file();
        if is_module && stem != "end_to_end" && !declared.contains(stem) {
            missing.push(stem.to_string());
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "host/tests files not declared in host/tests/end_to_end.rs (add `mod NAME;` there): {missing:?}"
    );
}
