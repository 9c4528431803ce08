//! A `postgres://` store address: recognised, split into what the client
//! connects with and the schema the store lives in, and shown without its
//! password (the only form that reaches a message, a log or `--json`).
//! libpq's `sslmode` and `sslrootcert` are read here too (the client
//! crate knows neither `verify-ca`, `verify-full` nor `sslrootcert`):
//! taken out of what the client connects with, kept in what is shown.

use super::tls::SslMode;

/// The schema a store lives in when the address names none.
pub const DEFAULT_SCHEMA: &str = "worldline";

/// A parsed store address.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreUrl {
    /// What the client connects with (the `schema` key taken out).
    pub connect: String,
    /// The schema holding the store's tables.
    pub schema: String,
    /// The address without its password.
    pub shown: String,
    /// The address's `sslmode`, if it names one (`tls.rs` falls back on
    /// `PGSSLMODE`, then `prefer`).
    pub sslmode: Option<SslMode>,
    /// The address's `sslrootcert` (percent-decoded), if it names one.
    pub sslrootcert: Option<String>,
}

/// Whether `s` names a PostgreSQL store rather than a folder.
pub fn is_postgres(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// Split `s` (which [`is_postgres`]) into a [`StoreUrl`]; the error says
/// what is wrong with it, without repeating the password.
pub fn parse(s: &str) -> Result<StoreUrl, String> {
    let (scheme, rest) = s.split_once("://").ok_or("not a postgres:// address")?;
    // Read as the client reads it: the credentials end at the first `@`,
    // the host at the first `/` or `?` after them. (A password holding `/`
    // or `?` was cut there, and the rest of it shown as the path or query.)
    let (userinfo, after) = match rest.split_once('@') {
        Some((u, a)) => (Some(u), a),
        None => (None, rest),
    };
    if after.contains('@') {
        return Err(
            "an `@` past the address's credentials: write an `@` in a user name or password as %40"
                .into(),
        );
    }
    let host_end = after.find(['/', '?']).unwrap_or(after.len());
    let (host, tail) = after.split_at(host_end);
    let (before_query, query) = match tail.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (tail, None),
    };
    let path = before_query.strip_prefix('/');
    let (authority, shown_authority) = match userinfo {
        Some(u) => {
            let user = u.split(':').next().unwrap_or_default();
            (format!("{u}@{host}"), format!("{user}@{host}"))
        }
        None => (host.to_string(), host.to_string()),
    };
    let mut schema = DEFAULT_SCHEMA.to_string();
    let mut sslmode = None;
    let mut sslrootcert = None;
    let schema_pair;
    let mut kept = Vec::new();
    let mut shown_kept = Vec::new();
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "schema" => schema = value.to_string(),
            "password" => kept.push(pair),
            "sslmode" => {
                sslmode = Some(SslMode::parse(&percent_decode(value))?);
                shown_kept.push(pair);
            }
            // The client's own certificate is not supported (decision
            // 0256): the client library said "unknown option `sslcert`".
            "sslcert" | "sslkey" => {
                return Err(format!(
                    "{key}: client certificates are not supported; authenticate with a password (in `PGPASSWORD`), over `sslmode=verify-full`"
                ));
            }
            "sslrootcert" => {
                let file = percent_decode(value);
                if file.is_empty() {
                    return Err("sslrootcert is empty: give a PEM file of the certificates to trust (or `system`)".into());
                }
                sslrootcert = Some(file);
                shown_kept.push(pair);
            }
            _ => {
                kept.push(pair);
                shown_kept.push(pair);
            }
        }
    }
    if !is_schema_name(&schema) {
        return Err(format!(
            "schema `{schema}`: give a lower-case name of letters, digits and `_` (at most 63, not starting with a digit)"
        ));
    }
    if schema == "information_schema" || schema.starts_with("pg_") {
        return Err(format!(
            "schema `{schema}` is PostgreSQL's own (`information_schema` and the `pg_` schemas hold the server's catalogs): give a schema of the store's own, e.g. `?schema=evals`"
        ));
    }
    let with = |authority: &str, pairs: &[&str]| {
        let mut out = format!("{scheme}://{authority}");
        if let Some(p) = path {
            out.push('/');
            out.push_str(p);
        }
        if !pairs.is_empty() {
            out.push('?');
            out.push_str(&pairs.join("&"));
        }
        out
    };
    let mut shown_pairs = shown_kept;
    if schema != DEFAULT_SCHEMA {
        schema_pair = format!("schema={schema}");
        shown_pairs.push(schema_pair.as_str());
    }
    Ok(StoreUrl {
        connect: with(&authority, &kept),
        schema: schema.clone(),
        shown: with(&shown_authority, &shown_pairs),
        sslmode,
        sslrootcert,
    })
}

/// The password `url` connects with (decoded, as the client reads it),
/// if it holds one: what a process that starts another with the address
/// without it ([`StoreUrl::shown`]) gives it in `PGPASSWORD`.
pub fn password(url: &StoreUrl) -> Option<Vec<u8>> {
    let config: postgres::Config = url.connect.parse().ok()?;
    config.get_password().map(<[u8]>::to_vec)
}

/// `%XX` sequences decoded, as the client decodes the address's other
/// values (a sequence that is not one is kept as it is).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A schema name that needs no quoting and cannot inject SQL.
fn is_schema_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_never_shown_and_the_schema_is_taken_out() {
        let u = parse("postgres://ci:s3cret@db.example:5432/evals?schema=team_a&sslmode=disable")
            .unwrap();
        assert_eq!(u.schema, "team_a");
        assert_eq!(u.connect, "postgres://ci:s3cret@db.example:5432/evals");
        assert_eq!(u.sslmode, Some(SslMode::Disable));
        assert_eq!(
            u.shown,
            "postgres://ci@db.example:5432/evals?sslmode=disable&schema=team_a"
        );
        let u = parse("postgresql://db/evals?password=s3cret").unwrap();
        assert_eq!(u.schema, DEFAULT_SCHEMA);
        assert!(!u.shown.contains("s3cret"), "{}", u.shown);
        assert!(u.connect.contains("s3cret"));
    }

    #[test]
    fn a_password_holding_a_slash_or_a_question_mark_is_not_shown() {
        for pw in ["pa/ssSECRET", "hunter2?SECRET", "a/b?cSECRET"] {
            let given = format!("postgres://ci:{pw}@127.0.0.1:44409/postgres?schema=team");
            let u = parse(&given).unwrap();
            assert_eq!(
                u.shown,
                "postgres://ci@127.0.0.1:44409/postgres?schema=team"
            );
            assert_eq!(
                u.connect,
                format!("postgres://ci:{pw}@127.0.0.1:44409/postgres")
            );
            assert_eq!(u.schema, "team");
        }
        let e = parse("postgres://ci:hunter@2/SECRET@127.0.0.1/postgres").unwrap_err();
        assert!(e.contains("%40") && !e.contains("SECRET"), "{e}");
        let u = parse("postgres://127.0.0.1:5432").unwrap();
        assert_eq!(
            (u.shown.as_str(), u.connect.as_str()),
            ("postgres://127.0.0.1:5432", "postgres://127.0.0.1:5432")
        );
    }

    #[test]
    fn sslmode_and_sslrootcert_are_read_taken_out_and_shown() {
        let u = parse(
            "postgres://ci:s3cret@db.example/evals?sslmode=verify-full&sslrootcert=/etc/ca%20dir/ca.pem&connect_timeout=5",
        )
        .unwrap();
        assert_eq!(u.sslmode, Some(SslMode::VerifyFull));
        assert_eq!(u.sslrootcert.as_deref(), Some("/etc/ca dir/ca.pem"));
        assert_eq!(
            u.connect,
            "postgres://ci:s3cret@db.example/evals?connect_timeout=5"
        );
        assert_eq!(
            u.shown,
            "postgres://ci@db.example/evals?sslmode=verify-full&sslrootcert=/etc/ca%20dir/ca.pem&connect_timeout=5"
        );
        let u = parse("postgres://db/evals").unwrap();
        assert_eq!((u.sslmode, u.sslrootcert), (None, None));
        for (given, mode) in [
            ("disable", SslMode::Disable),
            ("prefer", SslMode::Prefer),
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
        ] {
            let u = parse(&format!("postgres://db/evals?sslmode={given}")).unwrap();
            assert_eq!(u.sslmode, Some(mode));
            assert_eq!(u.connect, "postgres://db/evals");
        }
        let e = parse("postgres://u:pw@db/evals?sslmode=verify").unwrap_err();
        assert!(
            e.contains("sslmode `verify`") && e.contains("verify-full"),
            "{e}"
        );
        assert!(!e.contains("pw"), "{e}");
        for key in ["sslcert", "sslkey"] {
            let e = parse(&format!("postgres://db/evals?{key}=c.pem")).unwrap_err();
            assert!(e.contains("client certificates are not supported"), "{e}");
        }
        let e = parse("postgres://db/evals?sslmode=allow").unwrap_err();
        assert!(e.contains("prefer"), "{e}");
    }

    #[test]
    fn a_system_schema_is_refused() {
        for system in ["information_schema", "pg_catalog", "pg_temp", "pg_x"] {
            let e = parse(&format!("postgres://u:pw@h/db?schema={system}")).unwrap_err();
            assert!(e.contains("PostgreSQL's own"), "{e}");
        }
    }

    #[test]
    fn a_schema_that_would_need_quoting_is_refused() {
        for bad in ["", "Team", "a-b", "x;drop", "1abc"] {
            let e = parse(&format!("postgres://u:pw@h/db?schema={bad}")).unwrap_err();
            assert!(e.contains("schema"), "{e}");
            assert!(!e.contains("pw"), "{e}");
        }
    }
}
