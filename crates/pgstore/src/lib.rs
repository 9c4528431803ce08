//! A store kept in PostgreSQL, in a schema of its own (default
//! `worldline`): objects by SHA-256, each run's bundle lines (header,
//! hash-chained events, footer) written in one transaction with its row,
//! pins, and the runs gc removed; each run's redacted copy, the shared
//! redaction policy, the audit of raw reads and shard reports; what a
//! folder store keeps as files beside its runs (fuzz campaign reports, the
//! retention policy, re-grades). Who reads is a database role
//! (`roles.rs`): a viewer reads copies only. What live processes hold,
//! and gc's removals that honour it, are `leases.rs`.
//! `store.rs` keeps a working folder beside it and decides what goes
//! where; this module only speaks SQL, and every error it gives names the
//! server without its password.

#![deny(unreachable_pub)]

pub mod audit;
pub(crate) mod campaigns;
pub mod copies;
pub(crate) mod leases;
mod migrate;
pub(crate) mod regrades;
pub(crate) mod retention;
pub mod roles;
pub mod shards;
pub(crate) mod tls;
pub mod url;
pub mod writer;

pub use migrate::VERSION;
use postgres::{Client, NoTls};
use roles::Role;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use url::StoreUrl;
use writer::Writer;

/// A connection to one store's schema: made again by the first call after
/// it was lost (the server restarted), so a long-lived reader (`ui`) does
/// not fail until it is restarted.
pub struct Database {
    conn: Mutex<Conn>,
    /// Where the address was given, as [`Opening::given_in`] (for the
    /// errors of connecting again).
    given_in: String,
    pub url: StoreUrl,
    /// The connected user (`current_user`).
    pub user: String,
    /// What the connected user may read.
    pub role: Role,
    /// Objects this process stored or saw stored (a suite's runs share
    /// their agent and world: asked about once).
    known: Mutex<BTreeSet<String>>,
    /// This process's lease (`leases.rs`).
    lease: Mutex<leases::Lease>,
}

/// The connection itself, and what lives only as long as it does.
struct Conn {
    client: Client,
    /// How many times the connection was made again (a lease taken on an
    /// earlier one is gone with it: `leases.rs` takes it again).
    generation: u64,
    /// A call on it ended with the connection lost: the next call
    /// connects again (the client may not know it is closed).
    broken: bool,
    /// The run insert, prepared once on this connection (parsing and
    /// planning it for every run cost more than its execution).
    insert_run: Option<postgres::Statement>,
}

/// A failure talking to the store's database: the server (without its
/// password) and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DbError {
    pub shown: String,
    pub message: String,
    /// The connection ended inside the call (lost, or the server shut
    /// down): what it asked may have been done or not.
    pub lost: bool,
    /// The server could not be reached (refused, unreachable, not
    /// answering, starting up or shutting down) or the connection ended:
    /// a problem of the server, not of what the user gave (`--json`'s
    /// kind `store`, the UI's 503).
    pub unavailable: bool,
}

impl DbError {
    /// An error of what was asked (not of the server being away).
    fn refused(shown: &str, message: String) -> DbError {
        DbError {
            shown: shown.to_string(),
            message,
            lost: false,
            unavailable: false,
        }
    }
}

/// A run's redacted copy: its lines, made under the policy whose SHA-256
/// is `policy_sha256`.
pub struct Copy<'a> {
    pub policy_sha256: &'a str,
    pub lines: Vec<&'a str>,
}

/// What [`Database::put_run`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Stored {
    New,
    /// The same run was there already.
    Same,
    /// The store's policy changed since the copy was made: nothing written.
    PolicyChanged,
    /// Objects the run needs are not in the database (gc removed them
    /// after [`Database::missing_objects`] was asked): nothing written;
    /// send them with the run.
    Missing(Vec<String>),
}

/// A run as its row records it (the columns readers filter and gc follows).
pub struct RunRow<'a> {
    pub id: &'a str,
    pub agent_sha256: &'a str,
    pub case_hash: &'a str,
    pub world_hash: &'a str,
    pub chain_hash: &'a str,
    pub writer: &'a Writer,
    /// The run a fork was made from.
    pub parent: Option<&'a str>,
    /// Every object the run needs (sorted, each once): the database holds
    /// them all when the run is stored, and keeps them while it stays.
    pub objects: &'a [String],
}

/// What the server said of an error (its message, detail and hint):
/// `postgres::Error`'s own text is "db error" for every one of them.
fn said(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = db.message().to_string();
            for more in [db.detail(), db.hint()].into_iter().flatten() {
                text.push_str(&format!("; {more}"));
            }
            text
        }
        None => e.to_string(),
    }
}

/// The client's error with its source, which holds what it names (the
/// address's key, the socket's error).
fn with_source(e: &postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(s) => format!("{e}: {s}"),
        None => e.to_string(),
    }
}

/// A new connection to the server of `url` (`given_in`: where the address
/// was given, for what to change in it). A server that refuses the
/// connection, cannot be reached, does not answer, or is starting up or
/// shutting down is [`DbError::unavailable`]; a wrong password, a missing
/// database, a malformed address are not.
fn open(url: &StoreUrl, given_in: &str) -> Result<Client, DbError> {
    let fail = |message: String| DbError::refused(&url.shown, message);
    // The client's words name the key only in the error's source.
    let mut config: postgres::Config = url
        .connect
        .parse()
        .map_err(|e| fail(format!("not a usable address: {}", with_source(&e))))?;
    if config.get_password().is_none()
        && let Some(pw) = std::env::var_os("PGPASSWORD")
    {
        config.password(pw.to_string_lossy().as_bytes());
    }
    // `connect_timeout` bounds the whole of connecting, as libpq's does
    // (the client bounds the socket's connect only: a server that takes
    // the connection and never answers held every command for good).
    let within = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(std::time::Duration::from_secs(10));
    config.connect_timeout(within);
    config.application_name("worldline");
    let tls = tls::settings(url.sslmode, url.sslrootcert.as_deref(), |k| {
        std::env::var(k).ok()
    })
    .map_err(&fail)?;
    config.ssl_mode(tls.client_mode());
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".to_string(),
    };
    // The connecting thread is left to end on its own when it is late.
    let connector = tls.connector().map_err(&fail)?;
    let (sent, got) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sent.send(match connector {
            None => config.connect(NoTls),
            Some(connector) => config.connect(connector),
        });
    });
    let away = |message: String| DbError {
        unavailable: true,
        ..fail(message)
    };
    let connected = got.recv_timeout(within).map_err(|_| {
        away(format!(
            "cannot connect: {host} took the connection but did not answer within {} s (connect_timeout); is a PostgreSQL server there, and is it running?",
            within.as_secs_f64()
        ))
    })?;
    connected.map_err(|e| match unreachable(&e) {
        true => away(tls.explain(&e, &host, given_in)),
        false => fail(tls.explain(&e, &host, given_in)),
    })
}

/// Whether connecting failed because the server is away: the connection
/// refused, reset or timed out, the host or network unreachable, or the
/// server starting up or shutting down (SQLSTATE class 57, 08). Not a
/// name that does not resolve, a password, a database, TLS.
fn unreachable(e: &postgres::Error) -> bool {
    use std::io::ErrorKind::*;
    if let Some(db) = e.as_db_error() {
        let class = &db.code().code()[..2];
        return class == "57" || class == "08";
    }
    if e.is_closed() {
        return true;
    }
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .is_some_and(|io| {
            matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | ConnectionAborted
                    | TimedOut
                    | HostUnreachable
                    | NetworkUnreachable
                    | UnexpectedEof
                    | BrokenPipe
                    | NotConnected
            )
        })
}

/// How [`Database::connect`] opens a store.
pub struct Opening<'a> {
    /// Bring an older schema to this worldline's version (`migrate`).
    pub upgrade: bool,
    /// Make the store when its schema holds none (the commands that
    /// record); otherwise that is refused, nothing made (a mistyped
    /// `?schema=` is not an empty store that verifies).
    pub make: bool,
    /// Where the address was given, as a message says it (`--store`,
    /// the project file's `store`), for what to change in it.
    pub given_in: &'a str,
}

impl Database {
    /// Connect and bring the schema to this worldline's version (created
    /// when new and `how.make`; refused when newer, or older unless
    /// `how.upgrade`).
    pub fn connect(url: &StoreUrl, how: &Opening) -> Result<Database, DbError> {
        let fail = |message: String| DbError::refused(&url.shown, message);
        let mut client = open(url, how.given_in)?;
        // Most connections find the schema at this version: the user and
        // their role in one round trip. Otherwise the schema is migrated
        // (or refused, saying why) first.
        let (user, role) = match at_version(&mut client, &url.schema) {
            Some(found) => found,
            None => {
                if !how.make
                    && !holds_store(&mut client, &url.schema).map_err(|e| fail(said(&e)))?
                {
                    return Err(fail(format!(
                        "no store is there: the database has no worldline store in schema `{}`; check `schema=` in {} (the first `run`, `test` or `fuzz` makes a store, and so does `worldline migrate`)",
                        url.schema, how.given_in
                    )));
                }
                let mut tx = client.transaction().map_err(|e| fail(said(&e)))?;
                // A login in neither role is refused the store's schema:
                // it is told the GRANT to ask for (it was told "db error").
                let denied = |e: migrate::Refused| match &e {
                    migrate::Refused::Db(e)
                        if e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) =>
                    {
                        fail(format!(
                            "{} (SQLSTATE 42501): a login in neither role of this store is refused it; an administrator grants one (GRANT {} TO <login>; or {} for raw reads), or one who may create the schema makes the store",
                            said(e),
                            roles::group(&url.schema, Role::Viewer),
                            roles::group(&url.schema, Role::Responder)
                        ))
                    }
                    migrate::Refused::Db(e) => fail(said(e)),
                    other => fail(other.to_string()),
                };
                migrate::migrate(&mut tx, &url.schema, how.upgrade).map_err(denied)?;
                tx.commit().map_err(|e| fail(said(&e)))?;
                client
                    .batch_execute(&format!("SET search_path TO {}", url.schema))
                    .map_err(|e| fail(said(&e)))?;
                let user: String = client
                    .query_one("SELECT current_user::text", &[])
                    .map_err(|e| fail(said(&e)))?
                    .get(0);
                let role = roles::of_user(&mut client, &url.schema).map_err(|e| fail(said(&e)))?;
                (user, role)
            }
        };
        let role = role.ok_or_else(|| {
            fail(format!(
                "user `{user}` has no role in this store: an administrator grants one \
                     (GRANT {} TO {user}; or {} for raw reads)",
                roles::group(&url.schema, Role::Viewer),
                roles::group(&url.schema, Role::Responder)
            ))
        })?;
        Ok(Database {
            conn: Mutex::new(Conn {
                client,
                generation: 0,
                broken: false,
                insert_run: None,
            }),
            given_in: how.given_in.to_string(),
            url: url.clone(),
            user,
            role,
            known: Mutex::new(BTreeSet::new()),
            lease: Mutex::new(leases::Lease::default()),
        })
    }

    /// A refusal of what role `needed` may do, naming the database role to
    /// be granted.
    pub fn needs(&self, needed: Role, what: &str) -> DbError {
        DbError::refused(
            &self.url.shown,
            format!(
                "{what} needs the role {} (user `{}` is a {}): {}",
                roles::group(&self.url.schema, needed),
                self.user,
                self.role.name(),
                match needed {
                    Role::Responder =>
                        "a viewer sees the store's redacted view only (`history`, `runs`, `export`, `otel`, `ui`)",
                    Role::Viewer => "ask an administrator to grant it",
                }
            ),
        )
    }

    fn fail(&self, e: postgres::Error) -> DbError {
        let message = if e.is_closed() {
            format!("the connection was lost ({e})")
        } else {
            said(&e)
        };
        // Lost, or ended by the server: operator intervention (57: a
        // shutdown) or a connection exception (08).
        let ended = (e.as_db_error()).is_some_and(|d| {
            let class = &d.code().code()[..2];
            class == "57" || class == "08"
        });
        let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
        let lost = e.is_closed() || ended || io;
        DbError {
            shown: self.url.shown.clone(),
            message,
            lost,
            unavailable: lost,
        }
    }

    /// Run `f` on the connection, made again first when it was lost.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, DbError> {
        self.with_generation(|c, _| f(c))
    }

    /// [`with`](Self::with), `f` told the connection's generation (a
    /// lease taken on an earlier one is gone).
    fn with_generation<T>(
        &self,
        f: impl FnOnce(&mut Client, u64) -> Result<T, postgres::Error>,
    ) -> Result<T, DbError> {
        let mut conn = self.live()?;
        let generation = conn.generation;
        let done = f(&mut conn.client, generation).map_err(|e| self.fail(e));
        if done.as_ref().is_err_and(|e| e.lost) {
            conn.broken = true;
        }
        done
    }

    /// [`with`](Self::with) for a call that only reads: when the
    /// connection turns out lost (the server restarted since the last
    /// call), it is made again and `f` asked once more.
    fn read<T>(
        &self,
        mut f: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, DbError> {
        match self.with(&mut f) {
            Err(e) if e.lost => self.with(f),
            done => done,
        }
    }

    /// The connection, locked: made again when a call lost it or the
    /// client knows it closed.
    fn live(&self) -> Result<std::sync::MutexGuard<'_, Conn>, DbError> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if conn.broken || conn.client.is_closed() {
            let mut client = open(&self.url, &self.given_in)?;
            client
                .batch_execute(&format!("SET search_path TO {}", self.url.schema))
                .map_err(|e| self.fail(e))?;
            *conn = Conn {
                client,
                generation: conn.generation + 1,
                broken: false,
                insert_run: None,
            };
        }
        Ok(conn)
    }

    /// [`with`](Self::with), `f` given the run insert prepared on this
    /// connection.
    fn with_statement<T>(
        &self,
        f: impl FnOnce(&mut Client, &postgres::Statement) -> Result<T, postgres::Error>,
    ) -> Result<T, DbError> {
        let mut conn = self.live()?;
        let conn = &mut *conn;
        let prepared = match &conn.insert_run {
            Some(prepared) => Ok(prepared.clone()),
            None => conn.client.prepare(INSERT_RUN),
        };
        let done = prepared.and_then(|insert| {
            conn.insert_run = Some(insert.clone());
            f(&mut conn.client, &insert)
        });
        let done = done.map_err(|e| self.fail(e));
        if done.as_ref().is_err_and(|e| e.lost) {
            conn.broken = true;
        }
        done
    }

    /// Which of `shas` the database does not hold.
    pub fn missing_objects(&self, shas: &[String]) -> Result<Vec<String>, DbError> {
        let unknown: Vec<String> = {
            let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
            shas.iter()
                .filter(|s| !known.contains(*s))
                .cloned()
                .collect()
        };
        if unknown.is_empty() {
            return Ok(Vec::new());
        }
        let missing = self.read(|c| missing_of(c, &unknown))?;
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.extend(unknown.into_iter().filter(|s| !missing.contains(s)));
        Ok(missing)
    }

    /// An object's bytes, if the database holds it (to a viewer, only the
    /// agents runs name: the other objects hold the world's data).
    pub fn get_object(&self, sha: &str) -> Result<Option<Vec<u8>>, DbError> {
        let table = match self.role {
            Role::Responder => "objects",
            Role::Viewer => "agents",
        };
        self.read(|c| {
            Ok(c.query_opt(
                &format!("SELECT bytes FROM {table} WHERE sha256 = $1"),
                &[&sha],
            )?
            .map(|r| r.get(0)))
        })
    }

    /// Write a run whole: the objects it needs that are missing, its row,
    /// what it needs (`run_objects`), its lines and its redacted copy (made
    /// under the policy `copy` names), in one transaction. A run id
    /// already there with the same chain hash is the same run (nothing
    /// new); with another it is refused. When the store's policy is no
    /// longer the copy's, nothing is written ([`Stored::PolicyChanged`]:
    /// make the copy again); nor when an object the run needs is missing
    /// ([`Stored::Missing`]: gc removed it meanwhile, send it). The
    /// database holds the check: `run_objects` references `objects`, so a
    /// run whose object a gc pass removed after the check is refused by
    /// the server (and reported missing here), and no gc pass removes an
    /// object a stored run needs. Without objects to send, the run is one
    /// statement (atomic by itself): one round trip.
    pub fn put_run(
        &self,
        run: &RunRow,
        lines: &[&str],
        objects: &[(String, Vec<u8>)],
        copy: &Copy,
    ) -> Result<Stored, DbError> {
        let taken = self.with_statement(|c, insert| {
            let taken = match objects.is_empty() {
                true => insert_run(c, insert, run, lines, copy),
                false => (|| {
                    let mut tx = c.transaction()?;
                    for (sha, bytes) in objects {
                        tx.execute(
                            "INSERT INTO objects (sha256, bytes) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                            &[sha, bytes],
                        )?;
                    }
                    let taken = insert_run(&mut tx, insert, run, lines, copy)?;
                    if matches!(taken, Insert::Done | Insert::Taken(_)) {
                        tx.commit()?;
                    }
                    Ok(taken)
                })(),
            };
            match taken {
                Err(e) if e.code() == Some(&postgres::error::SqlState::FOREIGN_KEY_VIOLATION) => {
                    Ok(Insert::Missing(missing_of(c, run.objects)?))
                }
                taken => taken,
            }
        })?;
        let chain = match taken {
            Insert::PolicyChanged => return Ok(Stored::PolicyChanged),
            Insert::Missing(missing) => {
                let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
                for sha in &missing {
                    known.remove(sha);
                }
                return Ok(Stored::Missing(missing));
            }
            Insert::Done => None,
            Insert::Taken(chain) => Some(chain),
        };
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(objects.iter().map(|(sha, _)| sha.clone()));
        match chain {
            None => Ok(Stored::New),
            Some(chain) if chain == run.chain_hash => Ok(Stored::Same),
            Some(_) => Err(DbError::refused(
                &self.url.shown,
                format!("holds another run under the id {}", run.id),
            )),
        }
    }

    /// The writers of `ids` (those the database holds).
    pub fn writers_of(&self, ids: &[String]) -> Result<BTreeMap<String, Writer>, DbError> {
        self.read(|c| {
            let rows = c.query(
                "SELECT id, writer_user, writer_host, ci_job, job_index FROM runs WHERE id = ANY($1)",
                &[&ids],
            )?;
            Ok(rows
                .iter()
                .map(|r| {
                    let w = Writer {
                        user: r.get(1),
                        host: r.get(2),
                        ci_job: r.get(3),
                        job_index: r.get(4),
                    };
                    (r.get(0), w)
                })
                .collect())
        })
    }

    /// The runs whose writer's user, host, CI job or job index contains
    /// `text`.
    pub fn runs_written_by(&self, text: &str) -> Result<BTreeSet<String>, DbError> {
        self.read(|c| {
            let rows = c.query(
                "SELECT id FROM runs WHERE strpos(writer_user, $1) > 0 OR strpos(writer_host, $1) > 0
                    OR strpos(coalesce(ci_job, ''), $1) > 0 OR strpos(coalesce(job_index, ''), $1) > 0",
                &[&text],
            )?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Runs written after `seq` (the last one a reader pulled), in order;
    /// to a viewer, runs whose redacted copy was (re)made after `seq`.
    pub fn runs_after(&self, seq: i64) -> Result<Vec<(i64, String)>, DbError> {
        let sql = match self.role {
            Role::Responder => "SELECT seq, id FROM runs WHERE seq > $1 ORDER BY seq",
            Role::Viewer => "SELECT copy_seq, id FROM runs WHERE copy_seq > $1 ORDER BY copy_seq",
        };
        self.read(|c| {
            let rows = c.query(sql, &[&seq])?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// Runs removed after `seq`, in order.
    pub fn removed_after(&self, seq: i64) -> Result<Vec<(i64, String)>, DbError> {
        self.read(|c| {
            let rows = c.query(
                "SELECT seq, run_id FROM removed WHERE seq > $1 ORDER BY seq",
                &[&seq],
            )?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// The lines of each of `ids` that the database holds: to a viewer,
    /// those of their redacted copies.
    pub fn lines_of(&self, ids: &[String]) -> Result<BTreeMap<String, Vec<String>>, DbError> {
        let table = match self.role {
            Role::Responder => "frames",
            Role::Viewer => "redacted_frames",
        };
        self.read(|c| copies::lines_in(c, table, ids))
    }

    /// The SHA-256 of every object stored more than `grace_s` seconds ago.
    pub fn objects_older_than(&self, grace_s: i64) -> Result<BTreeSet<String>, DbError> {
        self.read(|c| {
            let rows = c.query(
                "SELECT sha256 FROM objects WHERE stored_at < now() - make_interval(secs => $1)",
                &[&(grace_s as f64)],
            )?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Pin a run with `note`; without one, a pinned run keeps its note.
    pub fn pin(&self, run_id: &str, note: Option<&str>) -> Result<(), DbError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO pins (run_id, note) VALUES ($1, COALESCE($2, ''))
                 ON CONFLICT (run_id) DO UPDATE SET note = COALESCE($2, pins.note)",
                &[&run_id, &note],
            )
            .map(|_| ())
        })
    }

    /// Unpin a run; whether it was pinned.
    pub fn unpin(&self, run_id: &str) -> Result<bool, DbError> {
        self.with(|c| Ok(c.execute("DELETE FROM pins WHERE run_id = $1", &[&run_id])? > 0))
    }

    /// The pinned runs.
    pub fn pins(&self) -> Result<BTreeSet<String>, DbError> {
        self.read(|c| {
            let rows = c.query("SELECT run_id FROM pins", &[])?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }
}

/// What [`insert_run`] found.
enum Insert {
    Done,
    PolicyChanged,
    /// Objects the run needs are missing: nothing written.
    Missing(Vec<String>),
    /// Another run (of this chain hash) holds the id.
    Taken(String),
}

/// Which of `shas` the database does not hold, sorted.
fn missing_of(c: &mut Client, shas: &[String]) -> Result<Vec<String>, postgres::Error> {
    Ok(c.query(
        "SELECT s FROM unnest($1::text[]) AS s
             WHERE NOT EXISTS (SELECT 1 FROM objects WHERE sha256 = s) ORDER BY s",
        &[&shas],
    )?
    .iter()
    .map(|r| r.get(0))
    .collect())
}

/// A run's row, the objects it needs, its lines and its redacted copy in
/// one statement, written only when every object it needs (`$17`) is
/// stored (else the missing ones are returned: gc removed them since they
/// were asked about) and the store's policy is still the copy's (`$13`,
/// its row read `FOR SHARE`: a policy being set is waited for, then seen).
const INSERT_RUN: &str = "WITH m AS (
     SELECT s FROM unnest($17::text[]) AS s
     WHERE NOT EXISTS (SELECT 1 FROM objects WHERE sha256 = s)
 ), p AS (
     SELECT policy_sha256 FROM redaction
     WHERE id = 1 AND policy_sha256 = $13 AND NOT EXISTS (SELECT 1 FROM m) FOR SHARE
 ), r AS (
     INSERT INTO runs (id, agent_sha256, case_hash, world_hash, chain_hash, frames,
                       writer_user, writer_host, ci_job, job_index, copy_policy, copy_seq,
                       parent)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, p.policy_sha256, nextval('copy_seq'), $16
     FROM p ON CONFLICT (id) DO NOTHING
     RETURNING id
 ), o AS (
     INSERT INTO run_objects (run_id, sha256)
     SELECT DISTINCT r.id, s FROM r, unnest($17::text[]) AS s
 ), f AS (
     INSERT INTO frames (run_id, n, line)
     SELECT r.id, t.n, t.line FROM r, unnest($11::integer[], $12::text[]) AS t (n, line)
 ), c AS (
     INSERT INTO redacted_frames (run_id, n, line)
     SELECT r.id, t.n, t.line FROM r, unnest($14::integer[], $15::text[]) AS t (n, line)
 )
 SELECT (SELECT count(*) FROM p), (SELECT count(*) FROM r), ARRAY(SELECT s FROM m ORDER BY s)";

/// Insert a run's row, what it needs, its lines and its redacted copy in
/// one statement, when the store's policy is still the copy's (its row
/// read `FOR SHARE`: a policy being set is waited for, then seen).
fn insert_run(
    c: &mut impl postgres::GenericClient,
    insert: &postgres::Statement,
    run: &RunRow,
    lines: &[&str],
    copy: &Copy,
) -> Result<Insert, postgres::Error> {
    let ns: Vec<i32> = (0..lines.len() as i32).collect();
    let copy_ns: Vec<i32> = (0..copy.lines.len() as i32).collect();
    let row = c.query_one(
        insert,
        &[
            &run.id,
            &run.agent_sha256,
            &run.case_hash,
            &run.world_hash,
            &run.chain_hash,
            &(lines.len() as i32),
            &run.writer.user,
            &run.writer.host,
            &run.writer.ci_job,
            &run.writer.job_index,
            &ns,
            &lines,
            &copy.policy_sha256,
            &copy_ns,
            &copy.lines,
            &run.parent,
            &run.objects,
        ],
    )?;
    let (policy, inserted, missing): (i64, i64, Vec<String>) = (row.get(0), row.get(1), row.get(2));
    if !missing.is_empty() {
        return Ok(Insert::Missing(missing));
    }
    if policy == 0 {
        return Ok(Insert::PolicyChanged);
    }
    if inserted > 0 {
        return Ok(Insert::Done);
    }
    Ok(Insert::Taken(
        c.query_one("SELECT chain_hash FROM runs WHERE id = $1", &[&run.id])?
            .get(0),
    ))
}

/// When `schema` is at [`migrate::VERSION`]: the connected user and their
/// role, with the search path set to the schema, in one round trip (the
/// simple query protocol prepares no statement). `None` when the schema is
/// missing or at another version, or the query fails: the caller then
/// takes the migrating path, which creates, upgrades or refuses it.
/// Whether `schema` holds a store (of any version): its `schema_version`
/// table is there. Read from the catalogs, which every login may read (a
/// login in neither role is then told which to ask for).
fn holds_store(client: &mut Client, schema: &str) -> Result<bool, postgres::Error> {
    let row = client.query_one(
        "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE n.nspname = $1 AND c.relname = 'schema_version')",
        &[&schema],
    )?;
    Ok(row.get(0))
}

fn at_version(client: &mut Client, schema: &str) -> Option<(String, Option<Role>)> {
    let sql = format!(
        "SET search_path TO {schema}; \
         SELECT (SELECT max(version) FROM {schema}.schema_version), current_user::text, {}",
        roles::membership_sql(schema)
    );
    let messages = client.simple_query(&sql).ok()?;
    let row = messages.iter().find_map(|m| match m {
        postgres::SimpleQueryMessage::Row(row) => Some(row),
        _ => None,
    })?;
    let version: i32 = row.get(0)?.parse().ok()?;
    if version != migrate::VERSION {
        return None;
    }
    let flag = |i| row.get(i) == Some("t");
    Some((
        row.get(1)?.to_string(),
        roles::from_membership(flag(2), flag(3)),
    ))
}
