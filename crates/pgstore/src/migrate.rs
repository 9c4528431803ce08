//! The store schema's versions: each migration is an SQL file compiled in,
//! applied in order inside one transaction under an advisory lock (so
//! writers starting together create the schema once). A schema newer than
//! this worldline, or older than it once it holds runs, is refused with
//! what to do; an empty one is created on first use. A migration may name
//! `{schema}` (the roles of 0003 are named after it). A schema already at
//! this version is only read, so a reader without CREATE rights connects.

use postgres::Transaction;

/// The migrations, oldest first; the schema's version is how many ran.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001-store.sql"),
    include_str!("migrations/0002-writers.sql"),
    include_str!("migrations/0003-roles.sql"),
    include_str!("migrations/0004-shared.sql"),
    include_str!("migrations/0005-gc-leases.sql"),
    include_str!("migrations/0006-run-index.sql"),
    include_str!("migrations/0007-run-index-footer.sql"),
    include_str!("migrations/0008-run-index-rules.sql"),
];

/// The schema version this worldline reads and writes.
pub const VERSION: i32 = MIGRATIONS.len() as i32;

/// Why a schema cannot be used as it is.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    #[error(
        "schema `{schema}` is at version {found}, newer than this worldline's {VERSION}: upgrade worldline on this machine (every writer of one store runs the same version)"
    )]
    Newer { schema: String, found: i32 },
    #[error(
        "schema `{schema}` is at version {found}, older than this worldline's {VERSION}: upgrade it with `worldline migrate --store URL` once every writer runs this version"
    )]
    Older { schema: String, found: i32 },
    #[error(transparent)]
    Db(#[from] postgres::Error),
}

/// Bring `schema` to [`VERSION`]: create it when it is new, refuse it when
/// it is newer, or older unless `upgrade`. Returns the version found.
pub(crate) fn migrate(tx: &mut Transaction, schema: &str, upgrade: bool) -> Result<i32, Refused> {
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&schema])?;
    let exists: bool = tx
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{schema}.schema_version")],
        )?
        .get(0);
    let current: Option<i32> = match exists {
        true => tx
            .query_one(
                &format!("SELECT max(version) FROM {schema}.schema_version"),
                &[],
            )?
            .get(0),
        false => None,
    };
    let found = current.unwrap_or(0);
    if found == VERSION {
        return Ok(found);
    }
    if found > VERSION {
        return Err(Refused::Newer {
            schema: schema.to_string(),
            found,
        });
    }
    if found > 0 && !upgrade {
        return Err(Refused::Older {
            schema: schema.to_string(),
            found,
        });
    }
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         SET LOCAL search_path TO {schema};
         CREATE TABLE IF NOT EXISTS schema_version (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.batch_execute(&sql.replace("{schema}", schema))?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&(i as i32 + 1)],
        )?;
    }
    Ok(found)
}
