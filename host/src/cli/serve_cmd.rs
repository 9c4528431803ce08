//! `worldline serve CASE... --addr ADDR`: the cases served as OpenEnv
//! environments on a loopback address (the protocol is
//! `native::openenv`'s), every episode a run in the store, until SIGINT
//! or SIGTERM. A `reset` may begin from a recorded episode of the store
//! (`fork_of`), opened here (`fork::served`).

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use worldline_case::case::{self, discover};
use worldline_case::error::InputError;
use worldline_engine::native::openenv::{self, Served};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// The most sessions `--max-sessions` allows.
const MOST_SESSIONS: usize = 4096;

/// The longest `--idle-timeout` taken, in seconds (a year; `mcp --http`'s
/// too): the clock adds it to the time of each message, and a value near
/// 2^64 seconds overflowed that sum, a panic at the first connection that
/// ended the server and every session.
pub(super) const MOST_IDLE_SECONDS: u64 = 365 * 24 * 60 * 60;

/// An `--idle-timeout` of `seconds` as a duration, or why it is refused:
/// 0 would close (`closes`) before the first message, and more than
/// [`MOST_IDLE_SECONDS`] is past what the clock is asked to add.
pub(super) fn idle_timeout(seconds: u64, closes: &str) -> Result<std::time::Duration, InputError> {
    if seconds == 0 {
        return Err(InputError::new(
            "--idle-timeout",
            format!("0 would {closes}: give 1 to {MOST_IDLE_SECONDS} seconds"),
        ));
    }
    if seconds > MOST_IDLE_SECONDS {
        return Err(InputError::new(
            "--idle-timeout",
            format!("{seconds} is out of range: give 1 to {MOST_IDLE_SECONDS} seconds (a year)"),
        ));
    }
    Ok(std::time::Duration::from_secs(seconds))
}

#[derive(Args)]
pub struct ServeArgs {
    /// The case files (TOML), or folders searched for them as `test`
    /// does, a `reset` may name (by case name; with one, `reset` need not
    /// name it).
    #[arg(required = true)]
    pub cases: Vec<PathBuf>,
    /// The loopback address to serve at (`127.0.0.1:PORT`, `[::1]:PORT` or
    /// `localhost:PORT`; port 0 picks a free one); the WebSocket endpoint
    /// is ws://ADDR/ws.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8000", value_parser = loopback_addr)]
    pub addr: SocketAddr,
    /// Sessions (client connections) at once; more are refused with
    /// OpenEnv's CAPACITY_REACHED.
    #[arg(long, default_value_t = 1024)]
    pub max_sessions: usize,
    /// Close a connection that sends no message for this many seconds,
    /// its pings not counted (its episode is ended and graded).
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    pub idle_timeout: u64,
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above each case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

/// An `--addr` (or `mcp --http`) as typed: an IP address and port, or
/// `localhost:PORT` as `127.0.0.1:PORT` (the name's address worldline
/// listens at, not a lookup's).
pub(super) fn loopback_addr(text: &str) -> Result<SocketAddr, String> {
    if let Some(port) = text.strip_prefix("localhost:") {
        return port
            .parse::<u16>()
            .map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
            .map_err(|_| format!("`{port}` is no port (0 to 65535): give localhost:PORT"));
    }
    text.parse().map_err(|_| {
        "give an IP address and a port, as 127.0.0.1:8000 (or localhost:8000)".to_string()
    })
}

/// Why no episode of `c` can pass, if none can: an episode's actions are
/// tool calls and `end`, so it gives no output and says nothing to a user
/// (an RL trainer got a reward of 0 from every episode, however right).
fn unservable(c: &case::Case) -> Option<String> {
    let e = c.expect.as_ref()?;
    let what = if e.output.is_some() {
        "[expect.output]: an episode gives no output"
    } else if e.conversation.is_some() {
        "[expect.conversation]: an episode says nothing to the user"
    } else if e.turn.iter().any(|t| !t.said.is_empty()) {
        "a turn's `said`: an episode says nothing to the user"
    } else {
        return None;
    };
    Some(format!(
        "{what} (its actions are tool calls and `end`), so no episode of `{}` can pass; serve a case graded on the world's state and the calls, or run this one with `worldline test`",
        c.name
    ))
}

pub fn exec(args: ServeArgs) -> Result<ExitCode> {
    if !args.addr.ip().is_loopback() {
        return Err(InputError::new(
            "--addr",
            format!("{} is not a loopback address; the worlds are served to this machine only (use 127.0.0.1:PORT)", args.addr),
        )
        .into());
    }
    let idle = idle_timeout(
        args.idle_timeout,
        "close every connection before its first message",
    )?;
    if args.max_sessions == 0 || args.max_sessions > MOST_SESSIONS {
        return Err(InputError::new(
            "--max-sessions",
            format!(
                "{} is out of range: give 1 to {MOST_SESSIONS}",
                args.max_sessions
            ),
        )
        .into());
    }
    // Each case by the name `test` gives it (`incident/close-denied`),
    // which a reset names (two of one file name were refused).
    let paths = discover::expand(&args.cases)?;
    let names = worldline_engine::suite::pick::distinct_names(paths.iter().map(|p| p.as_path()));
    let mut cases = Vec::new();
    for (path, name) in paths.iter().zip(names) {
        let c = case::load(path, args.worlds.as_deref())?;
        if let Some(why) = unservable(&c) {
            return Err(InputError::new(path, why).into());
        }
        cases.push((name, c));
    }
    // The server lives as long as the process: its store and sandbox are
    // shared by every session's thread.
    let store: &'static StoreDir = Box::leak(Box::new(StoreDir::open(&args.common.store)?));
    let sandbox: &'static Sandbox = Box::leak(Box::new(
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice()),
    ));
    let json = args.common.json;
    let names: Vec<String> = cases.iter().map(|(n, _)| n.clone()).collect();
    let served = Served {
        sandbox,
        store,
        cases,
        max_sessions: args.max_sessions,
        idle,
        fork: Box::new(move |run, at| {
            // Only the events before the fork point are sent again, held
            // compact as they are read (decision 0380).
            // A client names a run by its id, never a bundle's path.
            let path = store.resolve_run_id_saying(
                run,
                "; a served episode's last observation gives its `run_id`",
            )?;
            let rec =
                worldline_engine::replay::open_prefix_held(store, path, at.saturating_add(1))?;
            worldline_engine::fork::served(store, rec, at)
        }),
    };
    openenv::serve(served, args.addr, |addr| {
        // Where it listens, said; a stdout that fails does not stop it.
        if json {
            let _ = out!(
                "{}",
                serde_json::json!({"addr": addr.to_string(), "ws": format!("ws://{addr}/ws"), "cases": names})
            );
        } else {
            let _ = out!(
                "worldline serve: {} at ws://{addr}/ws (OpenEnv; Ctrl-C ends it)",
                names.join(", ")
            );
        }
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
    })?;
    Ok(ExitCode::Ok)
}
