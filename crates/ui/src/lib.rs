//! `worldline ui`: a local web app over one store: the runs, a run's
//! timeline, the state at any event, forks, diffs, replays and fuzz
//! campaigns. Pages are rendered on the server from the store with maud
//! templates (the stylesheet and a few lines of script compiled into the
//! binary; nothing is fetched from anywhere else); the forms call the
//! operations of `ops/`. The server binds 127.0.0.1 and lets in only
//! requests that pass [`guard`]. On a database store each token has a
//! role: a viewer's pages show the store's redacted view only and cannot
//! fork or replay; a responder's page asked for with `?unredacted=1` is
//! shown raw once its read is audited (`access.rs`).
//!
//! Why routes take run ids of the store, never paths (was decision 0102): every
//! route parameter is resolved by `StoreDir::resolve_run_id` (a run id or a
//! unique prefix, inside `runs/`) and anything else is 404, because
//! `/run/<percent-encoded path>` once rendered any bundle on the machine
//! (`/run/%2Fetc%2Fpasswd` opened the file); a page's parameters come from
//! whoever can make the browser ask for a URL. Canonicalising a path and
//! checking it is under `runs/` would still parse untrusted text as a path, and
//! a symlink inside `runs/` would escape.

#![deny(unreachable_pub)]

mod access;
mod actions;
mod calls;
mod campaigns;
mod conversation;
mod diff;
mod event;
mod find;
pub(crate) mod guard;
mod html;
mod keys;
mod lineage;
mod run;
mod runs;
mod table;
mod timeline;
mod usage;

use anyhow::Result;
use axum::Router;
use axum::extract::{Extension, Form, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, OnceLock};
use worldline_log::redact::Redactor;
use worldline_pgstore::roles::Role;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// Which page the printed URL opens.
pub enum Start {
    Runs,
    Run(String),
    /// The newest failed (or faulted) run.
    LastFailed,
}

pub struct Config {
    pub store: std::path::PathBuf,
    pub port: u16,
    pub open: bool,
    pub read_only: bool,
    pub start: Start,
    /// The redaction policy pages apply (default: the store's redact.toml).
    pub redact: Option<std::path::PathBuf>,
    /// Show everything, whatever the store's policy.
    pub unredacted: bool,
    /// The project's `[prices]` (a case's own override them).
    pub prices: worldline_case::prices::Prices,
    /// On a database store, the tokens to issue: a name, and a role (the
    /// connection's when none); none asked for: one, named after the
    /// database user, with its role.
    pub tokens: Vec<(String, Option<Role>)>,
}

/// What every page handler sees.
pub struct App {
    pub store: StoreDir,
    pub secrets: Arc<guard::Secrets>,
    pub read_only: bool,
    sandbox: OnceLock<Sandbox>,
    redact: Option<std::path::PathBuf>,
    unredacted: bool,
    /// What model calls cost, where the case has no price of its own.
    pub prices: worldline_case::prices::Prices,
}

/// A run a page names that is not in the store (404): a page takes run
/// ids and their prefixes, never paths.
#[derive(Debug)]
struct NotFound(String);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFound {}

impl App {
    /// The app for `store`, served on `port` (the Host header must name
    /// it), with a fresh token for each reader (one, of no role, when none
    /// is given) and a fresh CSRF token.
    pub fn new(store: StoreDir, port: u16, read_only: bool) -> Result<App> {
        App::with_readers(store, port, read_only, Vec::new())
    }

    /// [`App::new`] issuing a token to each of `readers`.
    pub fn with_readers(
        store: StoreDir,
        port: u16,
        read_only: bool,
        mut readers: Vec<guard::Reader>,
    ) -> Result<App> {
        if readers.is_empty() {
            readers.push(guard::Reader {
                name: "ui".into(),
                role: None,
            });
        }
        let tokens = readers
            .into_iter()
            .map(|reader| {
                Ok(guard::Token {
                    reader,
                    secret: guard::random_token()?,
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(App {
            store,
            secrets: Arc::new(guard::Secrets {
                tokens,
                csrf: guard::random_token()?,
                port,
            }),
            read_only,
            sandbox: OnceLock::new(),
            redact: None,
            unredacted: false,
            prices: worldline_case::prices::Prices::default(),
        })
    }

    /// Price model calls with `prices` where the case has none.
    pub fn pricing(self, prices: worldline_case::prices::Prices) -> App {
        App { prices, ..self }
    }

    /// Redact with `policy` instead of the store's redact.toml, or not at
    /// all (`unredacted`).
    pub fn redacting(self, policy: Option<std::path::PathBuf>, unredacted: bool) -> App {
        App {
            redact: policy,
            unredacted,
            ..self
        }
    }

    /// A fresh redactor of a folder store's view (none without a policy
    /// or with `--unredacted`).
    fn folder_redactor(&self) -> Result<Option<Redactor>> {
        worldline_log::redact::for_store(&self.store.root, self.redact.as_deref(), self.unredacted)
    }

    /// The bundle of run `id` (an id or a unique prefix, inside the store):
    /// one that is none is a 404; the store's server away stays the
    /// store's error (a 503: the page may work once it is back).
    pub fn run_path(&self, id: &str) -> Result<std::path::PathBuf> {
        self.store.resolve_run_id(id).map_err(|e| match e.store {
            true => anyhow::Error::from(e),
            false => NotFound(e.message).into(),
        })
    }

    /// Run `id` with its case, its events held compact (decision 0380),
    /// to be read: the run, event and diff pages.
    pub fn recorded_held(&self, id: &str) -> Result<worldline_engine::replay::RecordedRun> {
        worldline_engine::replay::open_to_read(&self.store, self.run_path(id)?, None)
    }

    /// The sandbox forks and replays run in, made on first use.
    fn sandbox(&self) -> Result<&Sandbox> {
        if let Some(s) = self.sandbox.get() {
            return Ok(s);
        }
        let s = Sandbox::new(Some(self.store.compile_cache_dir()))?;
        Ok(self.sandbox.get_or_init(|| s))
    }
}

/// Who a page is served to: the token's reader, and whether it asked for
/// the raw view (a responder's, audited).
#[derive(Clone)]
pub struct Viewing {
    pub reader: guard::Reader,
    pub unredacted: bool,
}

/// The app as one request sees it.
pub struct Seen {
    app: Arc<App>,
    pub viewing: Viewing,
}

impl std::ops::Deref for Seen {
    type Target = App;
    fn deref(&self) -> &App {
        &self.app
    }
}

impl Seen {
    pub fn new(app: Arc<App>, viewing: Viewing) -> Seen {
        Seen { app, viewing }
    }

    /// A fresh redactor for one page: every page shows runs through it.
    /// On a database store, the store's shared policy (a viewer-connected
    /// server reads the redacted copies: none), nothing for a responder's
    /// audited raw view; on a folder store, its redact.toml (or `--redact`,
    /// `--unredacted`).
    pub fn redactor(&self) -> Result<Option<Redactor>> {
        if self.viewing.unredacted {
            return Ok(None);
        }
        match self.store.database_redactor()? {
            Some(view) => Ok(view),
            None => self.app.folder_redactor(),
        }
    }

    /// Whether this reader may not fork or replay: `--read-only`, or a
    /// viewer (re-executing reads the raw run, case and world).
    pub fn read_only(&self) -> bool {
        self.app.read_only || self.viewing.reader.role == Some(Role::Viewer)
    }
}

/// What a page handler answers.
pub enum Reply {
    Page(String),
    /// 303 to another page (after a form that changed the store).
    Redirect(String),
    /// A page with an error status (bad input, a missing run).
    Problem(StatusCode, String),
}

impl Reply {
    /// A 404/400 page for an error; an input error names what was wrong.
    fn of_error(e: anyhow::Error) -> Reply {
        let status = if e.downcast_ref::<NotFound>().is_some() {
            StatusCode::NOT_FOUND
        } else if worldline_case::error::is_store(&e) {
            // The store's server is away: the page may work once it is
            // back (the connection is made again on the next request).
            StatusCode::SERVICE_UNAVAILABLE
        } else if worldline_case::error::is_input(&e) {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        Reply::Problem(
            status,
            html::layout("error", html::error_box(&format!("{e:#}"))),
        )
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        match self {
            Reply::Page(body) => Html(body).into_response(),
            Reply::Redirect(to) => {
                (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
            }
            Reply::Problem(status, body) => (status, Html(body)).into_response(),
        }
    }
}

/// Run a page on a blocking thread (pages read files; forks run agents).
async fn blocking(f: impl FnOnce() -> Result<Reply> + Send + 'static) -> Reply {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Reply::of_error(e),
        Err(e) => Reply::of_error(anyhow::anyhow!("the page failed: {e}")),
    }
}

/// An event's number in a page's path: one that is no number is the
/// page's 400 saying so (it was the framework's plain-text "Cannot parse
/// value at index 1").
fn event_number(n: &str) -> Result<u64> {
    n.parse().map_err(|_| {
        worldline_case::error::InputError::new(
            "event",
            format!(
                "{:?} is no event number: events are numbered from 0",
                worldline_case::shown::text(n)
            ),
        )
        .into()
    })
}

type Q = Query<BTreeMap<String, String>>;
type F = Form<BTreeMap<String, String>>;

type V = Extension<Viewing>;

/// The app's routes behind the guard and the view.
pub fn router(app: Arc<App>) -> Router {
    let secrets = app.secrets.clone();
    Router::new()
        .route(
            "/",
            get(|State(a): State<Arc<App>>, Extension(v): V, Query(q): Q| {
                blocking(move || runs::page(&Seen::new(a, v), &q))
            }),
        )
        .route(
            "/run/{id}",
            get(
                |State(a): State<Arc<App>>,
                 Extension(v): V,
                 Path(id): Path<String>,
                 Query(q): Q| {
                    blocking(move || run::page(&Seen::new(a, v), &id, &q))
                },
            ),
        )
        .route(
            "/run/{id}/event/{n}",
            get(
                |State(a): State<Arc<App>>,
                 Extension(v): V,
                 Path((id, n)): Path<(String, String)>| {
                    blocking(move || event::page(&Seen::new(a, v), &id, event_number(&n)?, None))
                },
            ),
        )
        .route(
            "/run/{id}/event/{n}/fork",
            post(
                |State(a): State<Arc<App>>,
                 Extension(v): V,
                 Path((id, n)): Path<(String, String)>,
                 Form(f): F| {
                    blocking(move || actions::fork(&Seen::new(a, v), &id, event_number(&n)?, &f))
                },
            )
            // The address a fork's answer leaves in the bar, asked again
            // (a reload, a bookmark): the event's page (it was a blank 405).
            .get(|Path((id, n)): Path<(String, String)>| async move {
                Reply::Redirect(format!("/run/{}/event/{}", html::url(&id), html::url(&n)))
                    .into_response()
            }),
        )
        .route(
            "/run/{id}/replay",
            post(
                |State(a): State<Arc<App>>, Extension(v): V, Path(id): Path<String>, Form(f): F| {
                    blocking(move || actions::replay(&Seen::new(a, v), &id, &f))
                },
            )
            // A replay's address asked again: the run's page, whose button
            // replays (it was a blank 405).
            .get(|Path(id): Path<String>| async move {
                Reply::Redirect(format!("/run/{}", html::url(&id))).into_response()
            }),
        )
        .route(
            "/diff",
            get(|State(a): State<Arc<App>>, Extension(v): V, Query(q): Q| {
                blocking(move || diff::page(&Seen::new(a, v), &q))
            }),
        )
        .route(
            "/campaigns",
            get(|State(a): State<Arc<App>>, Extension(v): V| {
                blocking(move || campaigns::list(&Seen::new(a, v)))
            }),
        )
        .route(
            "/campaign/{id}",
            get(
                |State(a): State<Arc<App>>, Extension(v): V, Path(id): Path<String>| {
                    blocking(move || campaigns::page(&Seen::new(a, v), &id))
                },
            ),
        )
        .with_state(app.clone())
        .layer(axum::middleware::from_fn_with_state(app, access::view))
        .layer(axum::middleware::from_fn_with_state(secrets, guard::guard))
}

/// The page the printed URL opens.
fn start_path(store: &StoreDir, start: &Start) -> Result<String> {
    Ok(match start {
        Start::Runs => "/".into(),
        Start::Run(r) => {
            let path = store.resolve_run(r)?;
            let id = path
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().to_string());
            // A bundle of no store (an export, a copy) has no page here.
            let canonical = |p: &std::path::Path| std::fs::canonicalize(p).ok();
            let here = store.resolve_run_id(&id).ok();
            if here
                .as_deref()
                .and_then(canonical)
                .is_none_or(|h| Some(h) != canonical(&path))
            {
                return Err(worldline_case::error::InputError::new(
                    &path,
                    format!(
                        "is no run of the store served ({}); import it first (`worldline import`), or name a bundle inside a store",
                        store.name()
                    ),
                )
                .into());
            }
            format!("/run/{}", html::url(&id))
        }
        Start::LastFailed => {
            let filter = worldline_store::index::query::Filter {
                status: vec!["failed".into(), "faulted".into()],
                limit: Some(1),
                ..Default::default()
            };
            let (rows, _) =
                worldline_store::index::Index::read(store, |index| index.query(&filter))?;
            let Some(row) = rows.first() else {
                return Err(worldline_case::error::InputError::new(
                    store.runs_dir(),
                    "no failed run in the store (--last-failed opens the newest one)",
                )
                .into());
            };
            format!("/run/{}", html::url(&row.run_id))
        }
    })
}

/// Serve until the process is stopped: the URLs to `out` once the server
/// listens (in one write, flushed), and to `err` why a browser could not be
/// opened (`--open`). The library never writes to the process's streams.
pub fn serve(
    cfg: Config,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> Result<()> {
    let store = StoreDir::open(&cfg.store)?;
    let readers = access::readers(&store, &cfg)?;
    // A database store's policy is read (and checked) here, outside the
    // server's runtime, which the synchronous client must not block.
    store.database_redactor()?;
    let path = start_path(&store, &cfg.start)?;
    // SAFETY: no other thread runs yet. A server must outlive a reader of
    // its stdout (or a browser) that goes away: writes then fail instead of
    // killing the process (main restores SIGPIPE's default for `| head`).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .enable_time()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", cfg.port))
            .await
            .map_err(|e| {
                let addr = format!("127.0.0.1:{}", cfg.port);
                worldline_case::error::InputError::cannot_listen("--port", addr, &e)
            })?;
        let port = listener.local_addr()?.port();
        let app = Arc::new(
            App::with_readers(store, port, cfg.read_only, readers)?
                .redacting(cfg.redact, cfg.unredacted)
                .pricing(cfg.prices),
        );
        // A policy that does not parse stops the server before any page.
        if app.store.database().is_none() {
            app.folder_redactor()?;
        }
        let sep = if path.contains('?') { '&' } else { '?' };
        let urls: Vec<String> = app
            .secrets
            .tokens
            .iter()
            .map(|t| format!("http://127.0.0.1:{port}{path}{sep}token={}", t.secret))
            .collect();
        let mut text = String::new();
        for (t, url) in app.secrets.tokens.iter().zip(&urls) {
            text.push_str(&format!("worldline ui on {url}\n"));
            if let Some(role) = t.reader.role {
                text.push_str(&format!("  token `{}`: {}\n", t.reader.name, role.name()));
            }
        }
        text.push_str("(the token in the URL is required; Ctrl-C stops the server)\n");
        // One write; whoever reads stdout may stop reading after it.
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        // The opener is waited for while the server serves: one that
        // fails is said (it failed silently, and was left a zombie).
        let opened = async {
            if cfg.open
                && let Some(why) = open_browser(&urls[0]).await
            {
                let _ = writeln!(err, "{why}");
                let _ = err.flush();
            }
        };
        // The accept loop of the loopback servers (`--exec`, `mcp
        // --http`, `serve`): at most 64 connections at once, and one that
        // has not sent a request's headers 10 s after it began waiting for
        // them is closed (a client that stopped partway held its
        // connection for good, and a few hundred held every descriptor).
        let served =
            worldline_engine::native::listen::serve(listener, router(app), std::future::pending());
        tokio::join!(served, opened);
        Ok(())
    })
}

/// Ask the desktop to open `url`, the opener waited for on a blocking
/// thread (and so reaped); why it could not, when it could not: it could
/// not start, or it ended with a failure (`xdg-open` with no browser).
async fn open_browser(url: &str) -> Option<String> {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let could_not = |why: String| {
        Some(format!(
            "could not open a browser ({why}): open the URL above"
        ))
    };
    let mut child = match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return could_not(format!("{opener}: {e}")),
    };
    match tokio::task::spawn_blocking(move || child.wait()).await {
        Ok(Ok(status)) if status.success() => None,
        Ok(Ok(status)) => could_not(format!("{opener} ended with {status}")),
        Ok(Err(e)) => could_not(format!("{opener}: {e}")),
        Err(e) => could_not(format!("{opener}: {e}")),
    }
}
