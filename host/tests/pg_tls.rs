//! TLS to a shared store: the real `worldline` binary against throwaway
//! clusters with TLS on (`common/pg.rs` makes their certificates from a
//! throwaway authority), one that takes only TLS connections with the
//! password checked, as a team's server would. Every refusal names the
//! server without its password and says what to do.

use crate::common;

use common::pg::{PASSWORD, Tls, cluster, fresh_schema, own_tls_cluster, throwaway_ca};
use common::{CliOutput, guest, temp_dir, worldline, worlds_dir, write_case};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `address` with `&query` added.
fn with(address: &str, query: &str) -> PathBuf {
    PathBuf::from(format!("{address}&{query}"))
}

/// A refusal: exit 2, naming the server without its password.
#[track_caller]
fn refused(out: &CliOutput, port: u16) {
    out.expect_code(2);
    assert!(
        out.stderr
            .contains(&format!("postgres://worldline@127.0.0.1:{port}/postgres")),
        "names the server: {out}"
    );
    assert!(
        !out.stdout.contains(PASSWORD) && !out.stderr.contains(PASSWORD),
        "{out}"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_run_is_stored_and_listed_over_verified_tls_and_refused_otherwise() {
    let pg = own_tls_cluster(Tls::Only);
    let ca = pg.ca.clone().unwrap();
    let schema = fresh_schema();
    let address = pg.store_in(&schema);
    let verified = with(
        &address,
        &format!("sslmode=verify-full&sslrootcert={}", s(&ca)),
    );
    let dir = temp_dir();
    let case = write_case(dir.path(), "good", common::DEMO_PASSES);
    let out = common::run_in(&verified, &case, &guest("caller-agent"), &worlds_dir());
    out.expect_code(0);
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    assert!(!out.stdout.contains(PASSWORD) && !out.stderr.contains(PASSWORD));
    assert_eq!(
        pg.psql(&format!("SELECT count(*) FROM {schema}.runs")),
        "1",
        "the run is in the database"
    );
    // The server takes TLS only, and says so of each connection it let in.
    let log = pg.log();
    assert!(
        log.contains("application_name=worldline SSL enabled"),
        "worldline connected over TLS: {log}"
    );

    let listed = worldline(&verified, ["runs", "--json"]);
    listed.expect_code(0);
    assert_eq!(listed.json()[0]["run_id"], run_id.as_str(), "{listed}");
    // The address as printed keeps how it connects, never the password.
    let migrated = worldline(&verified, ["migrate", "--json"]);
    migrated.expect_code(0);
    let shown = migrated.json()["store"].as_str().unwrap().to_string();
    assert!(shown.contains("sslmode=verify-full"), "{migrated}");
    assert!(!shown.contains(PASSWORD), "{migrated}");

    // `require` encrypts without checking the certificate: no root needed.
    let required = with(&address, "sslmode=require");
    let listed = worldline(&required, ["runs", "--json"]);
    listed.expect_code(0);
    assert_eq!(listed.json()[0]["run_id"], run_id.as_str(), "{listed}");

    // A root that did not sign the server's certificate.
    let wrong = throwaway_ca(dir.path(), "another-authority");
    let out = worldline(
        &with(
            &address,
            &format!("sslmode=verify-full&sslrootcert={}", s(&wrong)),
        ),
        ["runs", "--json"],
    );
    refused(&out, pg.port);
    assert!(
        out.stderr
            .contains("is not signed by a certificate authority in")
            && out.stderr.contains("another-authority.pem"),
        "says which check failed: {out}"
    );
    assert!(
        out.stderr.contains("sslrootcert=FILE") && out.stderr.contains("sslmode=require"),
        "says what to do: {out}"
    );

    // The right root, but a host name the certificate does not hold (it
    // names 127.0.0.1 only): verify-full refuses, verify-ca connects.
    let by_name = address.replace("127.0.0.1", "localhost");
    let out = worldline(
        &with(
            &by_name,
            &format!("sslmode=verify-full&sslrootcert={}", s(&ca)),
        ),
        ["runs", "--json"],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains("does not name the host `localhost`")
            && out.stderr.contains("verify-ca"),
        "{out}"
    );
    assert!(!out.stderr.contains(PASSWORD), "{out}");
    let out = worldline(
        &with(
            &by_name,
            &format!("sslmode=verify-ca&sslrootcert={}", s(&ca)),
        ),
        ["runs", "--json"],
    );
    out.expect_code(0);

    // A root file that cannot be read, or holds no certificate, is named.
    let missing = dir.path().join("no-such-ca.pem");
    let out = worldline(
        &with(
            &address,
            &format!("sslmode=verify-full&sslrootcert={}", s(&missing)),
        ),
        ["runs", "--json"],
    );
    refused(&out, pg.port);
    assert!(
        out.stderr
            .contains(&format!("sslrootcert {}: cannot read it", s(&missing))),
        "{out}"
    );
    let not_pem = dir.path().join("notes.txt");
    std::fs::write(&not_pem, "a note, not a certificate\n").unwrap();
    let out = worldline(
        &with(
            &address,
            &format!("sslmode=verify-full&sslrootcert={}", s(&not_pem)),
        ),
        ["runs", "--json"],
    );
    refused(&out, pg.port);
    assert!(out.stderr.contains("notes.txt: no certificate"), "{out}");

    // TLS turned off against a server that takes TLS only.
    let out = worldline(&with(&address, "sslmode=disable"), ["runs", "--json"]);
    refused(&out, pg.port);
    assert!(
        out.stderr.contains("takes only TLS connections")
            && out.stderr.contains("sslmode=verify-full"),
        "{out}"
    );

    // The environment speaks when the address does not.
    let out = common::worldline_env(
        ["runs", "--json", "--store", &address],
        &[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", s(&wrong))],
    );
    refused(&out, pg.port);
    assert!(out.stderr.contains("another-authority.pem"), "{out}");
    let out = common::worldline_env(
        ["runs", "--json", "--store", &address],
        &[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", s(&ca))],
    );
    out.expect_code(0);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn require_is_refused_by_a_server_without_tls_and_prefer_falls_back() {
    let pg = cluster();
    let schema = fresh_schema();
    let address = pg.store_in(&schema);
    let out = worldline(&with(&address, "sslmode=require"), ["runs", "--json"]);
    refused(&out, pg.port);
    assert!(
        out.stderr.contains("does not offer TLS") && out.stderr.contains("sslmode=require"),
        "{out}"
    );
    let dir = temp_dir();
    let ca = throwaway_ca(dir.path(), "ca");
    let out = worldline(
        &with(
            &address,
            &format!("sslmode=verify-full&sslrootcert={}", s(&ca)),
        ),
        ["runs", "--json"],
    );
    refused(&out, pg.port);
    assert!(out.stderr.contains("does not offer TLS"), "{out}");
    // The default (`prefer`), and `prefer` said, connect in plain.
    worldline(Path::new(&address), ["migrate", "--json"]).expect_code(0);
    worldline(&with(&address, "sslmode=prefer"), ["runs", "--json"]).expect_code(0);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn prefer_uses_tls_when_the_server_offers_it() {
    let pg = own_tls_cluster(Tls::On);
    let address = pg.store_in(&fresh_schema());
    worldline(Path::new(&address), ["migrate", "--json"]).expect_code(0);
    let log = pg.log();
    assert!(
        log.contains("application_name=worldline SSL enabled"),
        "the default connected over TLS: {log}"
    );
}
